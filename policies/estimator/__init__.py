"""The estimator: how long a run takes and what it costs on a given fleet.

- `estimate`        the time and cost formula (FLOPs, memory fit, MFU, goodput, spot), the
                    serving model, and the assumptions a plan states;
- `calibration`     the MFU model, fitted on the published training runs;
- `dcn`             the data-centre-network cost of a TPU multislice;
- `serving_figures` the serving model held against published serving throughput.

Pure arithmetic over the hardware table and the catalog: it never imports accel.policies.selection.
"""

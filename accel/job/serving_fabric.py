"""What a pipelined vLLM replica's stage hand-offs ride: the fabric the plan costs them at (assumptions.yaml
inference.pipeline_serving), reached through the NCCL network plugin the training job wires for the same machine
(manifests.wire_fabric). GKE's plugins are on the node, so any image reaches them once mounted; EFA's must be in the
image: the release image carries none, its EFA variant does (the default where stages hand off over EFA).

Facts: runtime.yaml serving.nccl_plugin (where each plugin lives, which images lack EFA's) and validate.nccl_transports
(the network name each plugin registers in NCCL's log), with sources.
"""

from __future__ import annotations

from accel.job.facts import cite, runtime


def _plugin_log(fabric: str) -> str:
    names = runtime()["validate"]["nccl_transports"].get(fabric, {}).get("networks", [])
    return f"'Using network {names[0]}'" if names else "'via NET/' with the fabric's plugin"


def pipelined_image(fabric: str, image: str) -> str:
    """The default image of a replica whose stages hand off over `fabric`: the release's variant that carries the
    fabric's in-image plugin (EFA: libfabric and aws-ofi-nccl) where the release image lacks it, else `image`."""
    row = runtime()["serving"]["nccl_plugin"]["in_image"].get(fabric)
    if row is not None and image in row["images_without"] and row.get("image_with"):
        return row["image_with"]
    return image


def hand_off_note(fabric: str, image: str, custom_image: bool) -> str:
    """The job's line on how NCCL carries the stage hand-offs of a replica on `fabric` in `image`."""
    facts = runtime()["serving"]["nccl_plugin"]
    check = f"check that NCCL_DEBUG=INFO logs {_plugin_log(fabric)}, not 'via NET/Socket'"
    if fabric in facts["on_node"]:
        return (f"pipeline hand-offs: NCCL between stages over {fabric}, through the plugin its node installer puts "
                "on the node, mounted into leader and worker as for training; the fabric's environment is set "
                "before `vllm serve` starts, so the worker processes it spawns on each node inherit it "
                f"({cite(facts['environment_source'])}); {check}")
    row = facts["in_image"].get(fabric)
    if row is None:
        return f"pipeline hand-offs: NCCL between stages over {fabric}; {check}"
    if image in row["images_without"] and not custom_image:
        return (f"pipeline hand-offs: {image} lacks {row['plugin']} ({cite(row['source'])}), so NCCL between "
                f"stages falls back to TCP sockets on each node's primary network, slower than the {fabric} the plan "
                f"costs them at; the {fabric} devices and environment are wired as for training: pass --image with "
                f"a vLLM image built with the EFA installer's {row['plugin']}, and {check}")
    if not custom_image and image == row.get("image_with"):
        return (f"pipeline hand-offs: NCCL between stages over {fabric}, wired as for training, through the "
                f"{row['plugin']} of {image}, the release's {fabric} variant ({cite(row['source'])}): {check}")
    return (f"pipeline hand-offs: NCCL between stages over {fabric}, wired as for training; {image} must carry "
            f"{row['plugin']} ({cite(row['source'])}), else NCCL falls back to sockets: {check}")

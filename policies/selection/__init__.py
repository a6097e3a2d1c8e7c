"""Hardware selection: which offering, how many chips, on what capacity, and why.

The steps, in the order a workload goes through them:

1. `candidates`   the offerings the hard constraints leave, their prices and capacity types;
2. `ladders`      the fleet sizes an offering can take (GPU nodes, TPU slices, serving replicas),
   `fleet_layout` how a GPU fleet splits into node pools within each cloud's limits;
3. `sizing`       the best fleet on one offering's ladder at one price, or why none fits
   (timed and priced by accel.policies.estimator);
4. `choose`       every candidate sized, ranked by the objective, the choice made (`choose`,
   `choose_plan`); `pin` is the same step for a hardware pin, without a search;
5. `explain`      the rationale and the nothing-feasible message, `tradeoffs` what each
   alternative trades against the choice, `choice` the Choice they are gathered in;
6. `plan_builder` the Plan the components build from a Choice, with `pools` (a pool a person
   writes by hand);
7. `pin_freshness` whether a pinned Plan is still what `choose` answers for its workload (accel plan).

This package exports nothing itself: the public names are accel.policies' (`choose`,
`choose_plan`, `make_plan`, `Choice`, ...). A name here would be shadowed by the submodule of
the same name (`accel.policies.selection.choose` is the module).
"""

"""A Pulumi stack's side of accel: its config read without the CLI, checked, pinned, and turned into
the arguments of its TrainingCluster.

- `config`      a stack's configuration as the Pulumi CLI would hand it to the program;
- `settings`    what a stack file may say under `accel:`, validated in one place;
- `pin`         a workload and its Plan pinned into a stack file (`accel choose --write-stack`);
- `deploy_keys` config only the user can give and `pulumi up` needs, which offline planning does without;
- `bookings`    a plan bought through a Capacity Block or calendar-mode reservation, on its declared booking
                or (not booked yet) on a placeholder with what to book;
- `words`       component arguments said in the words of the stack file;
- `program`     the stack program's one step (__main__.py): config -> workload -> Plan -> cluster arguments.
"""

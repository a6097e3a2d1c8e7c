"""The one walk over pod templates (accel/job/pod_templates.py): where each template is, whose it is, and the
counts of the pods it makes, as the schedule check and the rules read them."""

from __future__ import annotations

from accel.job.pod_templates import pod_templates

POD = {"spec": {"containers": [{"name": "c"}]}}


def test_a_jobset_gives_each_replicated_job_its_template_job_spec_and_counts():
    jobset = {"kind": "JobSet", "spec": {"replicatedJobs": [
        {"name": "slice", "replicas": 4, "template": {"spec": {"parallelism": 16, "template": POD}}},
        {"name": "driver", "template": {"spec": {}}},
    ]}}
    first, second = pod_templates([jobset], empty=True)
    assert (first.path, first.job_path, first.replicated_job, first.counts) == \
        ("spec.replicatedJobs[0].template.spec.template", "spec.replicatedJobs[0].template.spec", "slice", (4, 16))
    assert first.template is POD and first.owner is jobset and first.job["parallelism"] == 16
    assert (second.template, second.counts, second.job) == (None, (None, None), {})
    assert [t.path for t in pod_templates([jobset])] == [first.path]   # without `empty`, filled places only


def test_a_job_is_one_replica_of_parallelism_pods():
    job = {"kind": "Job", "spec": {"parallelism": 3, "template": POD}}
    (template,) = pod_templates([job])
    assert (template.path, template.job_path, template.counts, template.spec) == \
        ("spec.template", "spec", (1, 3), POD["spec"])


def test_a_leaderworkerset_gives_leader_then_worker_with_the_groups_counts():
    lws = {"kind": "LeaderWorkerSet", "spec": {"replicas": 2, "leaderWorkerTemplate": {"size": 4, "workerTemplate": POD}}}
    leader, worker = pod_templates([lws], empty=True)
    assert (leader.path, leader.leader, leader.template) == ("spec.leaderWorkerTemplate.leaderTemplate", True, None)
    assert (worker.path, worker.leader, worker.counts) == ("spec.leaderWorkerTemplate.workerTemplate", False, (2, 4))
    assert [t.path for t in pod_templates([lws])] == [worker.path]


def test_replicated_kinds_a_daemonset_and_a_bare_pod():
    objects = [{"kind": "Deployment", "spec": {"replicas": 5, "template": POD}},
               {"kind": "StatefulSet", "spec": {"template": POD}},
               {"kind": "DaemonSet", "spec": {"template": POD}},
               {"kind": "Pod", "metadata": {"name": "p"}, "spec": POD["spec"]},
               {"kind": "Service", "spec": {"selector": {"a": "b"}}}]
    found = [(t.owner["kind"], t.path, t.counts) for t in pod_templates(objects)]
    assert found == [("Deployment", "spec.template", (5, 1)), ("StatefulSet", "spec.template", (None, 1)),
                     ("DaemonSet", "spec.template", None), ("Pod", "", (1, 1))]
    assert list(pod_templates(objects))[-1].metadata == {"name": "p"}


def test_the_schedule_check_places_each_workload_kinds_pods_once():
    """pod_groups (accel/job/check.py) reads the walk for the kinds it places: a LeaderWorkerSet's pods by its worker
    template alone (`size` pods per group, the leader among them: counting the leader's template too would place
    every group twice), a JobSet's by replicated job, no group for a kind it does not place or a count that is not
    an integer (rule schema/integer-counts reports that one)."""
    from accel.job.check import pod_groups

    leader = {"metadata": {"labels": {"role": "leader"}}, "spec": {"containers": [{"name": "l"}]}}
    manifests = [
        {"kind": "LeaderWorkerSet", "metadata": {"name": "serve", "namespace": "inference"},
         "spec": {"replicas": 2, "leaderWorkerTemplate": {"size": 4, "leaderTemplate": leader, "workerTemplate": POD}}},
        {"kind": "JobSet", "metadata": {"name": "train"}, "spec": {"replicatedJobs": [
            {"name": "slice", "replicas": 3, "template": {"spec": {"parallelism": 16, "template": POD}}},
            {"name": "bad", "replicas": "3", "template": {"spec": {"template": POD}}}]}},
        {"kind": "Job", "metadata": {"name": "eval"}, "spec": {"template": POD}},
        {"kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 5, "template": POD}},
        {"kind": "StatefulSet", "metadata": {"name": "db"}, "spec": {"replicas": 3, "template": POD}},
        {"kind": "Pod", "metadata": {"name": "p"}, "spec": POD["spec"]},
    ]
    found = [(g.name, g.kind, g.namespace, g.replicas, g.per_replica, g.pods, g.template_field)
             for g in pod_groups(manifests)]
    assert found == [
        ("serve", "LeaderWorkerSet", "inference", 2, 4, 8, "spec.leaderWorkerTemplate.workerTemplate"),
        ("train/slice", "JobSet", "default", 3, 16, 48, "spec.replicatedJobs[0].template.spec.template"),
        ("eval", "Job", "default", 1, 1, 1, "spec.template"),
        ("web", "Deployment", "default", 5, 1, 5, "spec.template"),
    ]

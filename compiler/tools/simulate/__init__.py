"""``gpupolicy simulate``: Kueue v0.19.2 admission replayed on a job trace.

The simulator reads the *rendered* Kueue objects of one cluster (what ArgoCD syncs), and replays
a trace with the semantics of kubernetes-sigs/kueue at tag v0.19.2:

- ``objects``    the ResourceFlavors, Cohorts, ClusterQueues, LocalQueues, WorkloadPriorityClasses
                 and the manager Configuration's fair sharing block, from out/ files;
- ``quota``      the cohort tree's quota arithmetic (pkg/cache/scheduler/resource_node.go) and the
                 dominant resource share (pkg/cache/scheduler/fair_sharing.go);
- ``flavors``    flavor assignment with fungibility (pkg/scheduler/flavorassigner/flavorassigner.go);
- ``preemption`` classical target selection, ``fair_preemption`` fair sharing's, ``victims`` what
                 both share (pkg/scheduler/preemption/); ``bounds`` a sound test, run first,
                 that a search cannot find targets;
- ``scheduler``  one scheduling cycle (pkg/scheduler/scheduler.go, fair_sharing_iterator.go);
- ``replay``     the event-driven replay of a trace (queues, requeues, runs, preemptions), with
                 an exact fast path (memoised failures; ``Cluster.fast = False`` is the reference);
- ``traces``     trace readers (generic CSV, Philly, exported Workloads);
- ``causes``     why a workload waits, in the policy's terms;
- ``report`` / ``render`` per-team and per-cluster figures (idle and stranded GPU-hours),
                 baselines and output formats;
- ``compare``    ``simulate --base REF`` and ``diff --simulate TRACE``: the same trace against a
                 git revision, per-team deltas for the PR comment;
- ``command`` / ``args`` the CLI subcommand.

What is not modelled is listed in README.md ("gpupolicy simulate").
"""

"""``gpupolicy explain <team>``'s borrowing lines: who lends, and who may take borrowed GPUs back."""

from __future__ import annotations

from pathlib import Path

from helpers import copy_demo, mutate, policy_at

from compiler.tools.explain import explain_team


def _class_block(text: str, cluster: str, gpu_class: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith(f"cluster {cluster}:"))
    head = next(i for i in range(start, len(lines)) if lines[i].startswith(f"  {gpu_class} "))
    end = next((i for i in range(head + 1, len(lines)) if not lines[i].startswith("    ")), len(lines))
    return lines[head:end]


def test_only_a_lender_reclaims_and_a_queue_that_cannot_borrow_is_reclaimed_by_nobody(tmp_path: Path) -> None:
    """recsys on onprem h100-80gb: borrow 0 in the demo, so nothing it runs is borrowed and no queue
    reclaims it (it used to name nlp). With borrow 8 it may borrow, but nlp (lend 0) never lends
    and so never reclaims: only queues with lendable GPUs are named."""
    root = copy_demo(tmp_path)
    policy, _ = policy_at(root)
    assert policy is not None
    block = _class_block(explain_team(policy, "recsys"), "onprem", "h100-80gb")
    assert block[-1] == ("    may borrow from: nobody (borrow limit 0): it runs within its guarantee, which no other "
                         "queue reclaims")
    assert not any("reclaimed by" in x for x in block)
    mutate(root, "teams/recsys.yaml", "      guaranteed: 16\n      borrow: 0\n", "      guaranteed: 16\n      borrow: 8\n")
    policy, _ = policy_at(root)
    assert policy is not None
    block = _class_block(explain_team(policy, "recsys"), "onprem", "h100-80gb")
    reclaim = next(x for x in block if "reclaimed by" in x)
    assert "nlp" not in reclaim and reclaim.startswith("    borrowed GPUs can be reclaimed by: no lender;")
    assert any(x.startswith("    may borrow from: ") and "nlp" not in x for x in block)


def test_department_caps_say_they_bound_guarantees_not_use(tmp_path: Path) -> None:
    """A department cap bounds what its teams guarantee (KUEUE003); the rendered Cohorts carry no
    borrowing limit for it, so explain says borrowing can take the teams above it, with the
    numbers, for every capped department up the tree (a reviewer read research's cap as a limit)."""
    policy, _ = policy_at(copy_demo(tmp_path))
    assert policy is not None
    block = _class_block(explain_team(policy, "nlp"), "onprem", "h100-80gb")
    assert "    department research caps what its teams guarantee here at 40 (they guarantee 32); borrowing can " \
           "take them above it" in block
    assert any(x.startswith("    department ai caps what its teams guarantee here at 64 (they guarantee 48)")
               for x in block)

"""trnsim.models.plan: the plan search from Python, as `trnsim plan --json`: the counts, the
best plans ranked by step time with train()'s figures, and clear errors."""

import pytest

import trnsim.models as tm

TINY = dict(system="trn1.32xlarge", seq=256, global_batch=64)


def test_plan_ranks_every_legal_plan_and_matches_train():
    r = tm.plan("tiny-llama", micro_batch=[1], zero=[0, 1], recompute=["none"], top=100, jobs=2,
                **TINY)
    # TP 1, 2, 4 x PP 1, 2 on 32 ranks, DP >= 4: ZeRO 0 and 1 each
    assert r["enumerated"] == 12 and r["timed"] == 12 and r["illegal"] == 0
    times = [p["step_time_s"] for p in r["best"]]
    assert times == sorted(times) and len(times) == 12
    best = r["best"][0]
    alone = tm.train("tiny-llama", tp=best["tp"], pp=best["pp"], dp=best["dp"],
                     zero=best["zero"], micro_batch=best["micro_batch"], **TINY)
    assert alone["step_time_s"] == best["step_time_s"]
    assert best["bound"] in ("compute", "TP all-reduces", "pipeline bubble", "stage sends",
                             "DP gradients", "optimizer")
    assert "12 timed" in r["text"]


def test_plan_counts_illegal_plans_and_refuses_bad_options():
    r = tm.plan("tiny-llama", tp=[2, 8], pp=[1], micro_batch=[1], zero=[1],
                recompute=["none"], **TINY)
    assert r["illegal"] == 1 and r["timed"] == 1
    assert any("heads" in why for why in r["illegal_reasons"])
    with pytest.raises(ValueError, match="recompute"):
        tm.plan("tiny-llama", recompute=["partial"], **TINY)
    with pytest.raises(ValueError, match="lnc"):
        tm.plan("tiny-llama", lnc=[3], **TINY)


def test_plan_tries_expert_parallelism_for_a_moe():
    r = tm.plan("tiny-qwen3-moe", tp=[2], pp=[1], micro_batch=[1], zero=[1],
                recompute=["none"], ep=[1, 2, 4], **TINY)
    assert r["timed"] == 3
    assert sorted(p["ep"] for p in r["best"]) == [1, 2, 4]
    assert {p["expert_dp"] for p in r["best"]} == {1, 2}
    assert " EP " in r["text"]
    with pytest.raises(Exception, match="ep"):
        tm.plan("tiny-qwen3-moe", tp=[2], pp=[1], ep=[0], **TINY)

"""--objective time measures its tolerance within the best ranking class only (choose._cheapest_near_the_fastest):
a run priced by estimate, or an on-demand fleet past a zone's supply, is never taken over the fleets ranked before
it for being within the tolerance of their fastest, even when no option is both listed and supplied."""

from types import SimpleNamespace

from accel.policies.selection.choose import _cheapest_near_the_fastest


def _item(on_estimate: bool, unsupplied: bool, hours: float, usd: float, name: str):
    candidate = SimpleNamespace(evaluation=SimpleNamespace(total_usd=usd), name=name)
    return ((on_estimate, unsupplied, hours, usd, True, name, 0, False, False), candidate, "r")


def test_no_listed_and_supplied_option_keeps_the_best_class_first():
    # Every priced fleet is past a zone's supply; an estimate-priced one is faster and cheaper.
    priced_past_pool = _item(False, True, 100.0, 1000.0, "priced")
    estimated = _item(True, False, 90.0, 500.0, "estimated")
    ranked = sorted([estimated, priced_past_pool], key=lambda item: item[0])
    order, (fastest_at, fastest, pick) = _cheapest_near_the_fastest(ranked, 0.05, set())
    assert order[0] is priced_past_pool   # as by cost: the listed price first
    assert fastest_at == 0 and fastest == pick == 100.0


def test_the_rationale_never_reads_a_negative_gain():
    ranked = sorted([_item(False, True, 100.0, 1000.0, "a"), _item(False, True, 103.0, 900.0, "b"),
                     _item(True, False, 60.0, 100.0, "c"), _item(True, True, 50.0, 50.0, "d")],
                    key=lambda item: item[0])
    order, (fastest_at, fastest, pick) = _cheapest_near_the_fastest(ranked, 0.05, set())
    assert [item[1].name for item in order] == ["b", "a", "c", "d"]
    assert order[fastest_at][1].name == "a" and pick - fastest == 3.0


def test_a_listed_and_supplied_option_still_measures_alone():
    ranked = sorted([_item(False, False, 100.0, 1000.0, "a"), _item(False, False, 104.0, 800.0, "b"),
                     _item(False, True, 80.0, 100.0, "c"), _item(True, False, 70.0, 50.0, "d")],
                    key=lambda item: item[0])
    order, (fastest_at, _, _) = _cheapest_near_the_fastest(ranked, 0.05, set())
    assert [item[1].name for item in order] == ["b", "a", "c", "d"] and fastest_at == 1

"""The name rules the components check their arguments by (components/kubernetes/names.py) accept exactly what
the API server does: they agree with accel/job/rules/names.py, the port of apimachinery's validation.go that the
job rules use, on every text."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from accel.components.kubernetes import names as component
from accel.job.rules import names as upstream

# Short texts over the characters the rules are about, so edge cases ('..', '.-', '-.', a slash) come up often.
texts = st.text(alphabet="ab9-._/A\n", max_size=12)


@settings(max_examples=400)
@given(texts)
@example("a..b")
@example("a.-b")
@example("a-.b")
@example("x" * 254)
def test_a_subdomain_is_what_is_dns1123_subdomain_accepts(value):
    assert bool(component.DNS_SUBDOMAIN.fullmatch(value)) == (not upstream.dns1123_subdomain(value)), value


@settings(max_examples=400)
@given(texts)
@example("a..b/key")
@example("a.-b/key")
@example("example.com/" + "k" * 64)
@example(("p" * 254) + "/key")
def test_a_label_key_is_what_is_qualified_name_accepts(value):
    assert bool(component.LABEL_KEY.fullmatch(value)) == (not upstream.qualified_name(value)), value


@settings(max_examples=400)
@given(texts)
@example("a" * 64)
def test_a_label_and_a_label_value_are_what_upstream_accepts(value):
    assert (component.dns_label_problem("f", value) is None) == (not upstream.dns1123_label(value)), value
    assert bool(component.LABEL_VALUE.fullmatch(value)) == (not upstream.label_value(value)), value


@pytest.mark.parametrize("value", ["queued-provisioning.gke.io", "cloud.google.com", "a", "a.b-c.d9"])
def test_the_names_the_stacks_use_still_pass(value):
    assert component.DNS_SUBDOMAIN.fullmatch(value) and component.LABEL_KEY.fullmatch(f"{value}/key")

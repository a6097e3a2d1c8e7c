"""The GPUDirect pairing table: installers pinned to commits, the plugin each installs, the RxDM sidecar paired
with it, in one table (components/kubernetes/node_installers.yaml) that the job reads too."""

from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from accel.base.yaml_files import parse_yaml
from accel.components.kubernetes.node_installers import INSTALLERS_FILE, NodeInstallers, load_node_installers


def raw_table() -> dict:
    return parse_yaml(INSTALLERS_FILE.read_text())


def test_the_table_loads_and_every_pin_is_a_full_commit_with_a_date():
    table = load_node_installers()
    for name, pin in table.installers.items():
        assert re.fullmatch(r"[0-9a-f]{40}", pin.commit), name
        assert pin.images, name


@pytest.mark.parametrize("fabric, plugin_tag, sidecar_tag", [
    ("gpudirect-tcpx", "nccl-plugin-gpudirecttcpx-dev:v3.1.9", "tcpgpudmarxd-dev:v2.0.12"),
    ("gpudirect-tcpxo", "nccl-plugin-gpudirecttcpx-dev:v1.0.15", "tcpgpudmarxd-dev:v1.0.21"),
])
def test_each_tcp_fabric_pairs_the_plugin_with_the_rxdm_google_names_beside_it(fabric, plugin_tag, sidecar_tag):
    software = load_node_installers().fabrics[fabric]
    assert software.plugin.endswith(plugin_tag) and software.sidecar.endswith(sidecar_tag)
    assert plugin_tag.split(":")[1] in software.paired_by and sidecar_tag.split(":")[1] in software.paired_by


def test_a_plugin_that_is_not_what_the_pinned_installer_pulls_is_refused():
    table = raw_table()
    table["fabrics"]["gpudirect-tcpxo"]["plugin"] = (
        "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.3")  # the old pin's
    with pytest.raises(ValidationError, match="pair the plugin with the installer commit"):
        NodeInstallers.model_validate(table)


def test_a_floating_sidecar_is_refused():
    table = raw_table()
    table["fabrics"]["gpudirect-tcpx"]["sidecar"] = "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/tcpgpudmarxd-dev"
    with pytest.raises(ValidationError, match="untagged"):
        NodeInstallers.model_validate(table)


def test_an_installer_that_pulls_an_unlisted_floating_image_is_refused():
    table = raw_table()
    table["installers"]["nccl-tcpx-installer"]["images"][0] = (
        "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/nccl-plugin-gpudirecttcpx:latest")  # the old pin's image
    with pytest.raises(ValidationError, match="floating_upstream"):
        NodeInstallers.model_validate(table)


def test_a_listed_floating_upstream_image_becomes_a_plan_time_warning():
    table = load_node_installers()
    [warning] = table.floating_upstream("gpudirect-tcpxo")
    assert "ubuntu" in warning and "nccl-tcpxo-installer" in warning
    assert table.floating_upstream("gpudirect-tcpx") == []


def test_the_jobs_sidecar_is_the_tables():
    from accel.job.manifests import paired_sidecar_image

    table = load_node_installers()
    for fabric in ("gpudirect-tcpx", "gpudirect-tcpxo"):
        assert paired_sidecar_image(fabric) == table.fabrics[fabric].sidecar


def test_the_runtime_facts_no_longer_carry_a_sidecar_image_of_their_own():
    from accel.job.facts import runtime

    for fabric, facts in runtime()["fabrics"].items():
        assert "image" not in facts.get("sidecar", {}), fabric

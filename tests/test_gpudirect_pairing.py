"""The GPUDirect pairing table: installers pinned to commits, the plugin each installs, the RxDM sidecar paired
with it, in one table (components/kubernetes/node_installers.yaml) that the job reads too."""

from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from accel.base.yaml_files import parse_yaml
from accel.components.kubernetes.node_installers import (
    INSTALLERS_FILE,
    NodeInstallers,
    NoInstallerForArch,
    load_node_installers,
)


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


# ---- architectures: the x86 and Arm builds of a fabric's installers -------------------------------------

def test_rdma_pairs_google_x86_and_arm64_gib_builds_of_one_commit():
    table = load_node_installers()
    rdma = table.fabrics["rdma"]
    assert rdma.installers == ("nccl-rdma-installer",) and rdma.plugin.endswith("/nccl-plugin-gib:v1.1.1")
    assert rdma.arm64.installers == ("nccl-rdma-installer-a4x",)
    assert rdma.arm64.plugin.endswith("/nccl-plugin-gib-arm64:v1.1.0") and "v1.1.0" in rdma.arm64.paired_by
    x86, arm = table.installers["nccl-rdma-installer"], table.installers["nccl-rdma-installer-a4x"]
    assert x86.commit == arm.commit and arm.path == "gpudirect-rdma/nccl-rdma-installer-a4x.yaml"
    assert dict(arm.node_affinity) == {"cloud.google.com/gke-accelerator": ("nvidia-gb200",),
                                       "kubernetes.io/arch": ("arm64",)}


def test_every_gke_gpu_machine_gets_installers_that_admit_its_nodes():
    """The hardware table's GKE GPU machines on a fabric with installers: the installers for the machine's
    architecture schedule on its nodes (their node affinity admits its gke-accelerator and arch)."""
    from accel.policies import hardware

    table = load_node_installers()
    checked = []
    for machine_type, machine in hardware.current().gcp_gpu_machines.items():
        if machine.fabric not in table.fabrics:
            continue
        labels = {"cloud.google.com/gke-accelerator": machine.gke_accelerator}
        assert table.unadmitted(machine.fabric, machine.arch, labels) == [], machine_type
        checked.append(machine_type)
    assert {"a4x-highgpu-4g", "a4-highgpu-8g", "a3-ultragpu-8g", "a3-megagpu-8g", "a3-highgpu-8g"} <= set(checked)


def test_a_fabric_without_arm64_installers_names_what_it_has():
    with pytest.raises(NoInstallerForArch, match="'gpudirect-tcpx': .* amd64 nodes only, not arm64"):
        load_node_installers().for_fabric("gpudirect-tcpx", "arm64")


def test_an_arm64_plugin_that_is_not_what_its_installer_pulls_is_refused():
    table = raw_table()
    table["fabrics"]["rdma"]["arm64"]["plugin"] = "us-docker.pkg.dev/gce-ai-infra/gpudirect-gib/nccl-plugin-gib:v1.1.1"
    with pytest.raises(ValidationError,
                       match=r"fabrics.rdma.arm64.plugin .* pair the plugin with the installer commit"):
        NodeInstallers.model_validate(table)


def test_the_arm64_installer_keeps_the_x86_ones_resource_name_as_it_makes_the_same_daemonset():
    table = load_node_installers()
    assert table.resource_name("nccl-rdma-installer-a4x") == table.resource_name("nccl-rdma-installer")
    assert table.resource_name("nccl-tcpxo-installer") == "nccl-tcpxo-installer"


# ---- the NCCL env script: stated once here, found by the job under its mount of the installer's directory ----

def test_the_jobs_env_profile_is_the_tables_script_under_the_jobs_mount_of_the_installers_directory():
    from accel.job.facts import runtime
    from accel.job.manifests import _env_profile

    facts = runtime()["fabrics"]
    assert _env_profile("rdma", facts["rdma"]) == "/usr/local/gib/scripts/set_nccl_env.sh"
    assert _env_profile("gpudirect-tcpxo", facts["gpudirect-tcpxo"]) == "/usr/local/nvidia/lib64/nccl-env-profile.sh"
    assert _env_profile("gpudirect-tcpx", facts["gpudirect-tcpx"]) is None
    for fabric, software in load_node_installers().fabrics.items():
        assert "env_profile" not in facts[fabric], fabric          # stated once, in node_installers.yaml
        if software.host_dir:                                      # the job mounts what the installers fill
            assert software.host_dir in facts[fabric]["host_paths"].values(), fabric


def test_a_job_that_does_not_mount_the_installers_directory_is_refused():
    with pytest.raises(ValueError, match="does not mount /home/kubernetes/bin/gib"):
        load_node_installers().env_profile("rdma", {"/home/kubernetes/bin/nvidia": "/usr/local/nvidia"})


@pytest.mark.parametrize("change, message", [
    ({"env_script": "scripts/../../nvidia/lib64/x.sh"}, "must stay inside host_dir"),
    ({"env_script": "/usr/local/gib/scripts/set_nccl_env.sh"}, "should match pattern"),  # relative, not a pod path
    ({"host_dir": None}, "state host_dir too"),
])
def test_an_env_script_outside_its_installers_directory_is_refused(change, message):
    table = raw_table()
    table["fabrics"]["rdma"].update(change)
    with pytest.raises(ValidationError, match=message):
        NodeInstallers.model_validate(table)


@pytest.mark.parametrize("arch", ["amd64", "arm64"])
def test_the_rdma_fabric_check_runs_the_diagnostic_build_of_the_plugin_the_nodes_have(arch):
    """The fabric check's gIB diagnostic image (runtime.yaml) is the release of the plugin the node installer
    for that architecture puts on the node: v1.1.1 on x86 (A3 Ultra, A4), v1.1.0 arm64 on A4X."""
    from accel.job.facts import runtime

    plugin = load_node_installers().fabrics["rdma"].for_arch(arch).plugin
    diagnostic = runtime()["validate"]["nccl_tests_images"]["rdma"][arch]
    assert diagnostic.rsplit(":", 1)[1] == plugin.rsplit(":", 1)[1]
    # nccl-plugin-gib[-arm64] -> nccl-plugin-gib-diagnostic[-arm64]
    name = plugin.rsplit(":", 1)[0]
    assert diagnostic.rsplit(":", 1)[0] == name.replace("nccl-plugin-gib", "nccl-plugin-gib-diagnostic")

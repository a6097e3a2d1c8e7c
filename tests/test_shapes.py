import pytest

from accel.policies.hardware import shapes


def test_v5p_2x2x2_is_two_hosts_of_ct5p_hightpu_4t():
    assert shapes.machine_type("v5p", "2x2x2") == "ct5p-hightpu-4t"
    assert shapes.hosts_per_slice("v5p", "2x2x2") == 2


def test_v6e_2x4_is_one_eight_chip_host():
    assert shapes.machine_type("v6e", "2x4") == "ct6e-standard-8t"
    assert shapes.hosts_per_slice("v6e", "2x4") == 1


def test_v6e_16x16_is_sixty_four_hosts():
    assert shapes.hosts_per_slice("v6e", "16x16") == 64


def test_3d_shapes_past_the_base_need_multiples_of_four():
    with pytest.raises(shapes.ShapeError, match="multiple of 4"):
        shapes.check_topology("v5p", "4x4x6")


def test_2d_generation_rejects_a_3d_topology():
    with pytest.raises(shapes.ShapeError, match="2D"):
        shapes.check_topology("v5e", "2x2x2")


def test_v5p_type_names_count_tensorcores():
    assert shapes.tpu_vm_type("v5p", 64) == "v5p-128"
    gen, chips = shapes.parse_tpu_vm_type("v5p-128")
    assert (gen.name, chips) == ("v5p", 64)


def test_v6e_type_names_count_chips():
    assert shapes.tpu_vm_type("v6e", 64) == "v6e-64"


def test_odd_core_count_is_rejected_for_v4():
    with pytest.raises(shapes.ShapeError, match="even"):
        shapes.parse_tpu_vm_type("v4-7")



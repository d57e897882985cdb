"""Cross-field rules of ``sim.config``: combinations that would silently give a wrong result
are refused with one line naming the key, the value and what is allowed."""
import pytest

from sim.compose import check_overrides
from sim.config import ConfigError
from tests.conftest import CONFIG_DIR


@pytest.mark.parametrize("overrides, message", [
    # 65536 // 1448 = 45 frames per hardware-LRO aggregate, one vNIC RX slot each
    (["nic.lro=true", "vnic.rx_ring_slots=32"], "vnic.rx_ring_slots=32: must be >= 45"),
    # software LRO of 32000 bytes into a vmxnet3 guest that takes aggregates: 22 frames
    (["experiment=v6_vnic_rx_55", "vnic.rx_ring_slots=16"], "vnic.rx_ring_slots=16: must be >= 22"),
    # VXLAN without offload: 45 one-frame packets of 3 ixgbe descriptors each (context, header,
    # one page)
    (["experiment=vxlan_tx", "hypervisor.vswitch.vxlan.offload=false", "nic.tx_ring_slots=32"],
     "nic.tx_ring_slots=32: must be >= 135"),
    (["workload.socket_bytes=1000"], "workload.socket_bytes=1000: must be >= one MSS"),
    # what the NIC has (configs/nic/*.yaml: max_queues); what fits in memory and time
    (["nic=intel_pro1000mt_1g", "nic.tx_queues=2"], "nic.tx_queues=2: must be in 1..1"),
    (["nic=intel_82598", "nic.rx_queues=17"], "nic.rx_queues=17: must be in 1..16"),
    (["workload.vms=64", "workload.sessions_per_vm=65"],
     "workload.sessions_per_vm=65: must be <= 64"),
    (["host.cpu.sockets=8", "host.cpu.cores_per_socket=33"],
     "host.cpu.cores_per_socket=33: must be in 1..32 (8 sockets: at most 256 cores in all)"),
])
def test_refused_with_one_line(overrides, message):
    with pytest.raises(ConfigError) as err:
        check_overrides(CONFIG_DIR, overrides)
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("overrides", [
    ["nic.lro=true", "vnic.rx_ring_slots=45"],
    ["experiment=v6_vnic_rx_55", "vnic.rx_ring_slots=22"],
    ["experiment=v6_vnic_rx_55", "guest.lro=false", "vnic.rx_ring_slots=16"],  # no aggregates
    ["nic=intel_82599", "nic.rx_queues=128", "nic.tx_queues=128"],
    ["workload.vms=64", "workload.sessions_per_vm=64", "run.measure_s=1000"],
    ["host.cpu.sockets=8", "host.cpu.cores_per_socket=32"],
])
def test_accepted_at_the_limit(overrides):
    check_overrides(CONFIG_DIR, overrides)

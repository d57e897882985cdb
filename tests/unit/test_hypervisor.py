"""models.hypervisor: exit prices, driver kinds, software LRO counts, generation profiles.

Receive path of one port (``HypervisorRx``)::

    NIC RX queue --frames--> driver (per frame; + compat shim if linux_compat)
        --software LRO (aggregates <= software_lro_max_bytes, LRO-capable vNICs only)-->
        vswitch (per packet) --> vNIC backend (per packet) --> vNIC

Claim G80-rx-pps: the driver pays per frame, everything after it per aggregate.
"""
from pathlib import Path

import pytest

from models.base import ACK, DATA, Burst, CycleCost
from models.hypervisor import HypervisorFeatures, HypervisorParams, HypervisorRx, software_lro
from sim.config import ConfigError
from tests.conftest import CONFIG_DIR

MSS, HDR = 1448, 52
PROFILES = sorted(p.stem for p in Path(CONFIG_DIR, "hypervisor").glob("*.yaml"))
# The bare-metal host drives its NIC itself: it composes only with the direct device.
NEEDS = {"native": ["vnic=passthrough"]}
# The KVM profiles offer no vmxnet device (the default vNIC): each composes with its own.
KVM_VNIC = {"kvm": "virtio_net", "kvm_ovs_dpdk": "virtio_net_user"}
VMWARE = [p for p in PROFILES if p not in KVM_VNIC]


def _with_vnic(name: str) -> list[str]:
    return [f"hypervisor={name}", *([f"vnic={KVM_VNIC[name]}"] if name in KVM_VNIC else []),
            *NEEDS.get(name, [])]


def data(frames: int, dst: int = 0, packets: int | None = None) -> Burst:
    return Burst(DATA, 0, frames * MSS, frames, frames if packets is None else packets, HDR, MSS,
                 dst=dst)


class FakeVnic:
    def __init__(self, takes: bool):
        self.takes_aggregates = takes

    def rx_backend_cycles(self, packets: int, n_bytes: int) -> float:
        return 1500.0 + 500.0 * packets


class FakeVswitch:
    def __init__(self, vnics=()):
        self.got: list[Burst] = []
        self.ports = dict(enumerate(vnics))  # port id (the VM's endpoint) -> its vNIC

    def cycles(self, packets: int, n_bytes: int) -> float:
        return 600.0 * packets

    def rx_extra_terms(self, batch, context=None) -> dict:  # VXLAN / multicast: none here
        return {}

    def receive(self, batch, node=None):
        self.got.extend(batch)


def params(**kw) -> HypervisorParams:
    base = dict(driver_rx=CycleCost(3000.0, 450.0, 0.0), compat_rx=CycleCost(0.0, 250.0, 0.0),
                driver_tx=CycleCost(0.0, 450.0, 0.0), compat_tx=CycleCost(0.0, 250.0, 0.0),
                features=HypervisorFeatures(software_lro=True), software_lro_max_bytes=32000,
                driver_poll=CycleCost(0.0, 0.0, 0.0), software_lro_cost=CycleCost(0.0, 0.0, 0.0))
    return HypervisorParams(**{**base, **kw})


def test_exit_price_by_virtualization_mode():
    hv = HypervisorParams(vm_exit_cycles=4000.0, bt_trap_cycles=1500.0)
    assert hv.exit_cycles("hw") == 4000.0 and hv.exit_cycles("bt") == 1500.0
    with pytest.raises(ValueError, match="guest.virtualization='pv'"):
        hv.exit_cycles("pv")


def test_linux_compat_driver_pays_the_shim_per_packet_native_does_not():
    compat, native = params(driver_kind="linux_compat"), params(driver_kind="native")
    assert compat.rx_driver_terms(100, 0, 1) == {"driver_rx": 3000 + 450 * 100,
                                                  "compat_rx": 250 * 100}
    assert native.rx_driver_terms(100, 0, 1) == {"driver_rx": 3000 + 450 * 100}
    assert compat.tx_driver_terms(10, 0) == {"driver_tx": 450 * 10, "compat_tx": 250 * 10}
    assert native.tx_driver_terms(10, 0) == {"driver_tx": 450 * 10}
    with pytest.raises(ValueError, match="driver_kind='vmklinux'"):
        params(driver_kind="vmklinux")


def test_software_lro_aggregate_counts():
    takes = lambda dst: dst == 0  # noqa: E731  vNIC 0 takes aggregates, vNIC 1 does not
    # 45 frames of 1448 bytes (one 64KB TSO segment); 32000 // 1448 = 22 frames per aggregate.
    out = software_lro([data(45), data(45, dst=1), data(1), data(10, packets=1),
                        Burst(ACK, 0, 0, 3, 3, HDR, MSS)], 32000, takes)
    assert [b.packets for b in out] == [3, 45, 1, 1, 3]
    assert [b.frames for b in out] == [45, 45, 1, 10, 3]     # frames (and bytes) untouched
    assert out[0].wire_bytes == data(45).wire_bytes


def test_rx_cost_driver_per_frame_the_rest_per_aggregate():
    vs = FakeVswitch([FakeVnic(True), FakeVnic(False)])
    rx = HypervisorRx(params(driver_kind="native"), vs)
    batch = [data(45, dst=0), data(10, dst=1)]
    taken = rx.prepare(batch, None)
    terms = rx.cost(taken, is_interrupt=True)
    driver = 3000 + 450 * 55                    # every frame the NIC delivered
    vswitch = 600 * (3 + 10)                    # 3 aggregates for vNIC 0, 10 frames for vNIC 1
    backends = (1500 + 500 * 3) + (1500 + 500 * 10)
    assert terms == {"driver_rx": driver, "vswitch": vswitch, "backend_rx": backends}
    rx.deliver(taken)
    assert [b.packets for b in vs.got] == [3, 10]
    assert rx.driver_packets == 55 and rx.switched_packets == 13


def test_software_lro_pays_per_data_frame_it_takes_acks_and_other_vnics_not():
    vs = FakeVswitch([FakeVnic(True), FakeVnic(False)])
    rx = HypervisorRx(params(driver_kind="native", software_lro_cost=CycleCost(0.0, 200.0, 0.0)),
                      vs)
    batch = [data(45, dst=0), data(10, dst=1), Burst(ACK, 0, 0, 3, 3, HDR, MSS)]
    terms = rx.cost(rx.prepare(batch, None), is_interrupt=True)
    assert terms["lro"] == 200 * 45            # vNIC 0's data frames only
    off = HypervisorRx(params(features=HypervisorFeatures(software_lro=False),
                              software_lro_cost=CycleCost(0.0, 200.0, 0.0)), vs)
    assert "lro" not in off.cost(off.prepare(batch, None), is_interrupt=True)
    with pytest.raises(ValueError, match="software_lro_cost.fixed_cycles"):
        params(software_lro_cost=CycleCost(10.0, 200.0, 0.0))


def test_a_pass_pays_one_poll_per_budget_of_packets():
    hv = params(driver_kind="native", driver_poll=CycleCost(1000.0, 0.0, 0.0))
    assert hv.napi_budget_packets == 64
    for n, polls in ((1, 1), (64, 1), (65, 2), (200, 4)):
        assert hv.rx_driver_terms(n, 0, 0)["driver_poll"] == 1000 * polls
    assert "driver_poll" not in hv.rx_driver_terms(0, 0, 0)
    assert params(driver_poll=CycleCost(1000.0, 0.0, 0.0),
                  napi_budget_packets=16).rx_driver_terms(200, 0, 0)["driver_poll"] == 13000


def test_no_software_lro_without_the_feature():
    vs = FakeVswitch([FakeVnic(True)])
    rx = HypervisorRx(params(features=HypervisorFeatures(software_lro=False)), vs)
    rx.deliver(rx.prepare([data(45)], None))
    assert vs.got[0].packets == 45


@pytest.mark.parametrize("name", PROFILES)
def test_every_profile_composes(compose, name):
    cfg = compose(_with_vnic(name))
    assert cfg.hypervisor.name == name


def test_generations_features(compose):
    feats = {n: compose([f"hypervisor={n}", *NEEDS.get(n, [])]).hypervisor for n in VMWARE}
    assert [n for n, h in feats.items() if h.features.vnic_rss] == ["vsphere60"]
    assert not feats["esx35"].features.vmxnet3 and feats["esx40"].features.vmxnet3
    assert [n for n, h in feats.items() if h.driver_kind == "native"] == ["vsphere60"]
    assert not feats["esx35"].features.software_lro and feats["vsphere55"].features.software_lro
    assert all(h.vswitch.pending_tx_limit_packets == 200 for h in feats.values())
    kvm = {n: compose(_with_vnic(n)).hypervisor for n in KVM_VNIC}
    assert all(h.features.virtio_net and not h.features.vmxnet for h in kvm.values())
    assert [n for n, h in kvm.items() if h.poll_mode] == ["kvm_ovs_dpdk"]


@pytest.mark.parametrize("overrides, key", [
    (["vnic=vmxnet3"], "vnic.model=vmxnet3"),                      # esx35: no vmxnet3
    (["hypervisor=vsphere55", "vnic=vmxnet3", "vnic.rx_queues=4"], "vnic.rx_queues=4"),
    (["hypervisor=vsphere55", "vnic=vmxnet3", "nic.rx_queues=4", "nic.rx_sort=rss"],
     "nic.rx_sort=rss"),
    (["hypervisor=vsphere60", "vnic=vmxnet3", "nic.rx_queues=4", "nic.rx_sort=rss"],
     "nic.rx_sort=rss"),                                           # the vNIC did not ask
])
def test_features_are_enforced(compose, overrides, key):
    with pytest.raises(ConfigError, match=key):
        compose(overrides)


def test_software_lro_runs_once_per_batch(monkeypatch):
    """``prepare`` aggregates the batch; ``cost`` and ``deliver`` use that same result."""
    import models.hypervisor as hvmod
    calls = []
    real = hvmod.software_lro
    monkeypatch.setattr(hvmod, "software_lro", lambda *a: calls.append(1) or real(*a))
    vs = FakeVswitch([FakeVnic(True)])
    rx = HypervisorRx(params(), vs)
    batch = [data(45)]
    taken = rx.prepare(batch, None)
    rx.cost(taken, is_interrupt=True)
    rx.deliver(taken)
    assert len(calls) == 1 and [b.packets for b in vs.got] == [3]


def test_sums_by_dst():
    from models.base import sums_by_dst
    batch = [data(45, dst=0), data(10, dst=1), data(5, dst=0, packets=1)]
    assert sums_by_dst(batch) == {0: (46, 50 * 1448), 1: (10, 10 * 1448)}

"""VXLAN in the whole model: tunnelled line rate, per-frame driver cost without offload, one
decapsulation price for host and peer (moved from tests/unit/test_vxlan.py).
"""
import pytest

from models import units
from models.base import DATA, Burst


def tso_burst(frames=45, mss=1448):
    return Burst(DATA, 0, frames * mss, frames, 1, 52, mss, seq=0)


def test_transmit_reaches_the_tunnelled_line_rate(compose, run_one):
    """Goodput is capped by MSS / (MSS + 52 + 50 + 38) of 10 Gbps = 9.118 Gbps."""
    cfg = compose(["experiment=vxlan_tx", "run.warmup_s=0.03", "run.measure_s=0.05"],
                  short=False)
    model, summary, tables = run_one(cfg)
    bound = 10.0 * 1448 / units.vxlan_frame_wire_bytes(1500)
    assert bound == pytest.approx(9.118, abs=1e-3)
    assert 0.97 * bound < summary["goodput_gbps"] <= bound * 1.001
    assert model.vswitches[0].vtep.encapsulated_frames > 0


def test_without_offload_the_uplink_driver_pays_per_frame(compose):
    """Software segmentation hands the uplink one packet per frame; its driver's transmit cost
    (charged in the VM's networking context with the vswitch) is per packet it is handed."""
    from sim.builder import build

    seg = 45 * 1448                                       # one full TSO segment: 45 frames
    driver = {}
    for offload in (True, False):
        cfg = compose(["experiment=vxlan_tx", f"hypervisor.vswitch.vxlan.offload={offload}"])
        model = build(cfg)
        vnic, vs = model.vnics[0], model.vswitches[0]
        batch = [tso_burst(frames=45)._copy(dst=-1)]      # to the peer, out of the uplink
        terms = vnic._backend_extra(batch)
        driver[offload] = terms["driver_tx"] + terms.get("compat_tx", 0.0)
        assert set(terms) - {"driver_tx", "compat_tx"} == set(vs.tx_terms(batch))
        assert driver[offload] > 0
    assert driver[True] == pytest.approx(sum(cfg.hypervisor.tx_driver_terms(1, seg).values()))
    assert driver[False] / driver[True] == pytest.approx(45)


def test_host_and_peer_price_decapsulation_with_one_function(compose):
    from sim.builder import build

    model = build(compose(["experiment=vxlan_tx", "hypervisor.vswitch.vxlan.offload=false"]))
    vs, peer = model.vswitches[0], model.peers[0]
    batch = [vs.vtep.encap(tso_burst(frames=1)) for _ in range(3)] + [tso_burst(frames=2)]
    want = vs.vtep.rx_cycles(3, 3 * 1448)                 # the 3 tunnelled frames only
    assert vs.vtep.rx_batch_cycles(batch) == want == peer.vtep.rx_batch_cycles(batch)
    assert vs.rx_extra_terms(batch) == {"vxlan": want}


@pytest.mark.parametrize("experiment", ["vxlan_tx", "vxlan_rx"])
def test_the_peer_tunnel_endpoints_work_is_on_its_declared_path(compose, run_one, experiment):
    """The peer as the far tunnel endpoint decapsulates what it receives and encapsulates what
    it sends (``Peer._rx_cost``, ``send_down``); the declared path prices the same work
    (``Peer.driver_charges``), so the fluid engine's peer softirqs carry a VXLAN term near
    the DES's (the DES: ~100 Mcycles/s a softirq on vxlan_tx; none before the peer declared
    it)."""
    from sim import fluid

    cfg = compose([f"experiment={experiment}", "run.warmup_s=0.02", "run.measure_s=0.03"])
    _, _, tables = run_one(cfg)

    def peer_vxlan(t):
        t = t[t["context"].str.startswith("peer0.softirq") & (t["term"] == "vxlan")]
        return t["cycles_per_s"].sum()

    des, fl = peer_vxlan(tables["cost_terms"]), peer_vxlan(fluid.solve(cfg).tables["cost_terms"])
    assert des > 0
    assert fl == pytest.approx(des, rel=0.1)

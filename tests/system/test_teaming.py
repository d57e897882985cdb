"""NIC teaming (``models.teaming``, ``docs/teaming.md``): what each mechanism does to the model.

A team of four 1GbE ports (Broadcom 5709) serves one vswitch; the physical switch behind it has
a link to the peer at the team's aggregate rate. A flow is held to its member's line rate; the
load-balancing policy decides which flows share a member; the switch sends each flow's return
traffic down the member the policy gives. Short windows, one replication.
"""
from __future__ import annotations

import pytest

from models import costs
from models.teaming import PEER_OCTET_BASE, VM_OCTET_BASE
from sim.builder import build
from sim.config import ConfigError

W = ["run.warmup_s=0.01", "run.measure_s=0.03", "run.replications=1"]
MEMBERS = ["nic0", "nic1", "nic2", "nic3"]
LINE_GBPS = 1.0  # broadcom_5709_1g's line rate
# One member's goodput ceiling: 1448 payload bytes of 1538 on the wire (TCP timestamps)
ONE_MEMBER_GOODPUT_GBPS = LINE_GBPS * 1448 / 1538


@pytest.fixture(scope="module")
def run(compose, run_one):
    """run(experiment, *overrides) -> (model, summary, tables)."""
    def _run(experiment, *overrides):
        return run_one(compose([f"experiment={experiment}", *W, *overrides], short=False))
    return _run


def member_gbps(tables, column="tx_gbps"):
    nics = tables["nics"].set_index("nic")
    return [float(nics.loc[m, column]) for m in MEMBERS]


def test_one_flow_is_held_to_one_members_line_rate(run):
    _, s, t = run("team_4x1g_port_id_1flow")
    assert 0.9 * ONE_MEMBER_GOODPUT_GBPS < s["goodput_gbps"] <= ONE_MEMBER_GOODPUT_GBPS * 1.01
    busy = [g for g in member_gbps(t) if g > 0.1]
    assert len(busy) == 1 and busy[0] <= LINE_GBPS * 1.001


def test_four_vms_by_port_id_use_the_four_members(run):
    _, s, t = run("team_4x1g_port_id_4vms")
    assert s["goodput_gbps"] > 3.6 * ONE_MEMBER_GOODPUT_GBPS
    assert all(g > 0.9 * LINE_GBPS for g in member_gbps(t))


def test_port_id_pins_all_of_one_vms_flows_to_one_member(run):
    model, s, t = run("team_4x1g_port_id_4flows")
    ports = {model.port_of_flow(0, f) for f in range(4)}
    assert len(ports) == 1
    used = model.nics[ports.pop()].name
    for m, g in zip(MEMBERS, member_gbps(t)):
        assert (g > 0.9 * LINE_GBPS) if m == used else (g < 0.01), (m, g)
    assert s["goodput_gbps"] <= ONE_MEMBER_GOODPUT_GBPS * 1.01


def ip_hash_member(vm: int, session: int, addresses: int) -> int:
    """vSphere's IP hash on this model's address plan: last octets XORed, mod the members."""
    return ((VM_OCTET_BASE + vm) ^ (PEER_OCTET_BASE + session % addresses)) % len(MEMBERS)


@pytest.mark.parametrize("direction", ["tx", "rx"])
def test_ip_hash_puts_each_flow_where_the_hash_says_both_ways(run, direction):
    """Transmit by the vswitch's hash, receive by the switch's: each flow's bytes on its
    member's link, in both directions of the wire."""
    model, s, t = run("team_4x1g_ip_hash_4flows", f"workload.direction={direction}")
    want = {ip_hash_member(0, f, 4) for f in range(4)}
    assert want == {0, 1, 2, 3}
    assert {model.port_of_flow(0, f) for f in range(4)} == want
    column = "tx_gbps" if direction == "tx" else "rx_gbps"
    assert all(g > 0.8 * LINE_GBPS for g in member_gbps(t, column))
    assert s["goodput_gbps"] > 3.3 * ONE_MEMBER_GOODPUT_GBPS


def test_ip_hash_with_one_peer_address_keeps_one_pair_on_one_member(run):
    model, s, t = run("team_4x1g_ip_hash_4flows_1addr")
    used = [m for m, g in zip(MEMBERS, member_gbps(t)) if g > 0.01]
    assert used == [MEMBERS[ip_hash_member(0, 0, 1)]]
    assert s["goodput_gbps"] <= ONE_MEMBER_GOODPUT_GBPS * 1.01


def test_mac_hash_shares_a_member_between_vms_whose_macs_collide(run):
    """The member is the MAC's last byte mod 4; the goodput follows the members in use."""
    model, s, t = run("team_4x1g_mac_hash_4vms", "run.seed=2")
    ports = [model.port_of(v) for v in range(4)]
    assert len(set(ports)) < 4  # seed 2 draws MACs that collide (builder: vm{i}.mac stream)
    busy = [g for g in member_gbps(t) if g > 0.1]
    assert len(busy) == len(set(ports))
    assert s["goodput_gbps"] <= len(set(ports)) * ONE_MEMBER_GOODPUT_GBPS * 1.01
    # the return traffic (ACKs) comes back on the member the VM's MAC was learned on
    rx = member_gbps(t, "rx_gbps")
    assert [g > 0.001 for g in rx] == [i in set(ports) for i in range(4)]


def test_hash_policies_pay_the_uplink_hash_per_packet(run, compose_raw):
    raw = compose_raw(["experiment=team_4x1g_ip_hash_4flows"], short=False)
    per_packet = raw["host"]["teaming"]["uplink_hash"]["per_packet_cycles"]
    model, s, t = run("team_4x1g_ip_hash_4flows")
    terms = t["cost_terms"]
    hashed = float(terms[terms["term"] == costs.TEAMING]["cycles_per_s"].sum())
    host_tx_packets = float(t["nics"].set_index("nic").loc[MEMBERS, "tx_packets_per_s"].sum())
    assert hashed == pytest.approx(per_packet * host_tx_packets, rel=0.05)
    _, _, t2 = run("team_4x1g_port_id_4vms")
    assert costs.TEAMING not in set(t2["cost_terms"]["term"])


def test_the_path_and_the_fluid_engine_see_the_flows_member(compose):
    from sim.fluid import solve
    from sim.path import describe
    cfg = compose(["experiment=team_4x1g_ip_hash_4flows", *W], short=False)
    text = describe(build(cfg))
    assert "team vswitch0: 4 ports, policy ip_hash, via switch0" in text
    assert "switch0.to_peer" in text and "switch0.to_nic" in text
    one = solve(compose(["experiment=team_4x1g_ip_hash_4flows_1addr", *W], short=False))
    four = solve(cfg)
    assert one.summary["goodput_gbps"] <= ONE_MEMBER_GOODPUT_GBPS * 1.01
    assert four.summary["goodput_gbps"] > 3.6 * ONE_MEMBER_GOODPUT_GBPS


def test_bad_team_shapes_are_refused_in_one_line(compose):
    with pytest.raises(ConfigError, match=r"nic_ports=6: must be a multiple of "
                                          r"teaming.ports_per_team=4"):
        compose(["experiment=team_4x1g_port_id_4vms", "host.nic_ports=6"])
    with pytest.raises(ConfigError, match="multicast over a team is not modelled"):
        compose(["experiment=mc_default_30k", "host.nic_ports=2",
                 "host.teaming.ports_per_team=2"])
    with pytest.raises(ConfigError, match="a team needs topology.kind=native_peer"):
        compose(["experiment=team_4x1g_port_id_4vms", "topology.kind=remote_host"])
    with pytest.raises(ConfigError, match="bypasses the vswitch the team serves"):
        compose(["experiment=team_4x1g_port_id_4vms", "vnic=passthrough"])
    with pytest.raises(ConfigError, match="host.placement=numa_io: with a team"):
        compose(["experiment=team_4x1g_port_id_4vms", "host.placement=numa_io"])


def test_the_switch_drops_what_its_egress_buffer_cannot_hold(run):
    """A 10 Gbps peer link into a 1 Gbps member: the burst waits in the switch's egress
    buffer; a buffer smaller than the window in flight drops frames (tail drop)."""
    rx = ["workload.direction=rx", "host.teaming.peer_link_gbps=10",
          "workload.socket_bytes=262144"]
    _, s, t = run("team_4x1g_port_id_1flow", *rx, "host.teaming.switch_buffer_bytes=20000")
    drops = t["drops"]
    mine = drops[drops["reason"] == "switch_buffer_full"]
    assert len(mine) and set(mine["place"]) <= {f"switch0.to_{m}" for m in MEMBERS}
    assert s["loss_ratio"] > 0
    _, s2, t2 = run("team_4x1g_port_id_1flow", *rx)  # 1 MB: the window fits
    assert "switch_buffer_full" not in set(t2["drops"]["reason"])
    assert s2["goodput_gbps"] > 0.9 * ONE_MEMBER_GOODPUT_GBPS

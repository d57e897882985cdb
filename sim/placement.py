"""Where each context starts: the placement policies of ``host.placement``.

Cores are numbered socket-major (core ``i`` is on node ``i // cores_per_socket``); the RX
vectors of all ports, port-major, are ``vector`` 0, 1, ...; card ``c`` holds ports
``c * ports_per_card ...`` and hangs off node ``host.card_node(c)``.

- ``pinned`` (the sources' set-up; 000 pins the VM and the vector to adjoining cores): vector
  ``j`` on core ``irq_core + j``; the VMs' contexts (vCPUs, then networking contexts, VM by VM)
  take the other cores in order, then those cores round again (sharing, with world switches):
  the vectors' cores stay the vectors' own, as ESX's load-balancing scheduler keeps worlds off
  a core its interrupt handler keeps busy (only a host with no other core shares them).
  A VM whose vCPUs fit in one node keeps them on one node (ESX's NUMA scheduler gives it a
  *home node* and "a virtual machine runs only on processors within its home node", vSphere
  Resource Management, "How ESXi NUMA Scheduling Works"): when the next free cores would
  straddle two nodes, its vCPUs take the first run of free cores within one node instead.
  With NetQueue (``nic.rx_sort=vmdq``) and no idle core per vector (vectors >= cores), each
  VM's own queue's vector runs on that VM's first vCPU's core, its buffers in the VM's memory
  (004: "Interrupts can be moved to idle or optimal processor cores"; ``steers_vmdq_vectors``);
  only each port's default queue keeps a core aside.
  With ``guest.latency_sensitivity=high`` (vSphere 5.5) the vCPUs, VM by VM, take the first
  free cores, one each, and no other context is placed there: the other contexts go round the
  cores left (``sim.config`` checks that one is left; pinned only).
- ``spread``: vectors as ``pinned``; VM ``i`` goes to node ``i mod sockets`` and takes that
  node's other cores in order, then the node's cores round again.
- ``numa_io``: ``pinned`` as the default layout, plus a *NUMA layout* in which each card's
  vectors and the contexts of the VMs on its ports sit on the card's node (the vectors first,
  then the VMs in order, round the node's cores). ``models.numa.NumaIoScheduler`` switches
  each card's contexts between the two layouts at run time; they start in the NUMA layout when
  the threshold is above 0 (no load yet is below any positive threshold).

``make_plan(cfg)`` runs these policies before the build and returns a ``Plan``: every
context's core and NUMA home in each layout, keyed by context name; the builder places each
context by its name, and ``start_numa_io`` gives the NUMA I/O monitor both layouts.
"""
from __future__ import annotations

from dataclasses import dataclass

from models.vnic import is_direct


POLICIES = ("pinned", "spread", "numa_io")


class Placement:
    def __init__(self, policy: str, sockets: int, cores_per_socket: int, irq_core: int,
                 ports: int, rx_queues: int, ports_per_card: int, card_node, numa_active: bool,
                 exclusive: int = 0, steer: bool = False):
        """``card_node(c)`` gives card ``c``'s node; ``numa_active``: start in the NUMA layout;
        ``exclusive``: how many contexts (latency-sensitive vCPUs) get a core of their own;
        ``steer``: VMDq queue vectors follow their VMs (``steered``; pinned only)."""
        assert policy in POLICIES, policy
        assert not steer or policy == "pinned", policy
        self.policy, self.cps = policy, cores_per_socket
        self.n_cores = sockets * cores_per_socket
        self.sockets, self.rx_queues, self.ports_per_card = sockets, rx_queues, ports_per_card
        self.card_node = card_node
        self.numa_active = policy == "numa_io" and numa_active
        self.steer = steer
        n_vectors = ports * rx_queues
        self._pinned_vectors = [(irq_core + j) % self.n_cores for j in range(n_vectors)]
        if steer:  # only each port's default queue keeps a core aside, the ports' in a row
            self._pinned_vectors = [(irq_core + j // rx_queues) % self.n_cores
                                    for j in range(n_vectors)]
        reserved = {c for j, c in enumerate(self._pinned_vectors)
                    if not (steer and j % rx_queues)}
        self._free = [c for c in range(self.n_cores) if c not in reserved]
        self._i = 0  # pinned cursor over the free cores
        # Latency-sensitive vCPUs own the first free cores; the other contexts share the rest.
        assert exclusive == 0 or (policy == "pinned" and exclusive < len(self._free))
        self._owned, self._shared = self._free[:exclusive], self._free[exclusive:]
        self._j = 0  # cursor over the owned cores
        self._node_i = [0] * sockets  # spread cursors
        # NUMA layout: each node's cores go first to the vectors of its cards, then to VMs.
        self._numa_vectors: list[int] = []
        numa_next = [0] * sockets
        for j in range(n_vectors):
            node = self.node_of_port(j // rx_queues)
            self._numa_vectors.append(self._node_core(node, numa_next[node]))
            numa_next[node] += 1
        self._numa_next = numa_next
        self._vm_node = 0
        self._vm_card_node = 0
        self.layouts: dict[int, list[tuple[int, int]]] = {}  # vm -> [(default, numa) core]

    def node_of_port(self, port: int) -> int:
        return self.card_node(port // self.ports_per_card)

    def _node_core(self, node: int, k: int) -> int:
        return node * self.cps + k % self.cps

    def vector_core(self, j: int) -> int:
        return self._numa_vectors[j] if self.numa_active else self._pinned_vectors[j]

    def vector_layouts(self, j: int) -> tuple[int, int]:
        return self._pinned_vectors[j], self._numa_vectors[j]

    def start_vm(self, vm: int, port: int, vcpus: int = 1) -> None:
        """Start placing VM ``vm`` (on NIC port ``port``, with ``vcpus`` vCPUs placed first)."""
        self._vm = vm
        self._vm_node = vm % self.sockets
        self._vm_card_node = self.node_of_port(port)
        self.layouts[vm] = []
        if self.policy in ("pinned", "numa_io") and vcpus > 1:
            self._home_node(vcpus)

    def _home_node(self, vcpus: int) -> None:
        """ESX's NUMA scheduler gives a VM that fits in one node a home node and runs its vCPUs
        only there: when the next ``vcpus`` free cores of this round span two nodes, the cursor
        moves on to the first run of ``vcpus`` free cores within one node (the cores skipped
        are taken in the next round). A VM wider than a node, or one placed in a sharing round
        (cores already taken once), is left as it falls."""
        free, i = self._shared, self._i
        if vcpus > self.cps or i + vcpus > len(free):
            return
        for j in range(i, len(free) - vcpus + 1):
            if len({c // self.cps for c in free[j:j + vcpus]}) == 1:
                self._i = j
                return

    def next(self, exclusive: bool = False) -> int:
        """The core of the next context of the VM being built (in the active layout);
        ``exclusive``: a core of its own (a latency-sensitive vCPU; pinned only)."""
        assert not exclusive or self.policy == "pinned", self.policy
        default = self._next_spread() if self.policy == "spread" else \
            self._next_pinned(exclusive)
        numa = default
        if self.policy == "numa_io":
            node = self._vm_card_node
            numa = self._node_core(node, self._numa_next[node])
            self._numa_next[node] += 1
        self.layouts[self._vm].append((default, numa))
        return numa if self.numa_active else default

    def _next_pinned(self, exclusive: bool = False) -> int:
        if exclusive:
            j, self._j = self._j, self._j + 1
            return self._owned[j]
        i, self._i = self._i, self._i + 1
        free = self._shared
        return free[i % len(free)] if free else i % self.n_cores

    def _next_spread(self) -> int:
        node = self._vm_node
        free = [c for c in self._free if c // self.cps == node] or \
            list(range(node * self.cps, (node + 1) * self.cps))
        k, self._node_i[node] = self._node_i[node], self._node_i[node] + 1
        if k < len(free):
            return free[k]
        return self._node_core(node, k - len(free))


def vector_queues(cfg) -> int:
    """RX queues per port that have a vector context of their own: none for a direct device,
    whose NIC queues interrupt the guest's vCPUs (``models.vnic.direct``)."""
    return 0 if is_direct(cfg.vnic.model) else cfg.nic.rx_queues


def vector_cores(cfg) -> set[int]:
    """The cores the pinned layout keeps for the vectors: vector ``j`` on ``irq_core + j``."""
    host = cfg.host
    return {(host.irq_core + j) % host.cpu.n_cores
            for j in range(host.nic_ports * vector_queues(cfg))}


def steers_vmdq_vectors(cfg) -> bool:
    """NetQueue moves a VMDq queue's interrupt "to idle or optimal processor cores" (004): the
    pinned layout gives every vector a core of its own, which the VMs' contexts leave alone,
    while the vectors that take traffic (each port's default queue and one per VM behind it)
    are fewer than the cores. When they are not (17 VMs' 16 queues on an 8-core host, 15-16
    VMs on the 16-core one) no core is left idle and the vectors would share cores round-robin
    regardless of their VMs; instead each VM's own queue's vector runs on its VM's first
    vCPU's core (the optimal core: the queue's data are that vCPU's to read) and only each
    port's default queue keeps a core aside. Pinned, VMDq, not latency-sensitive."""
    host = cfg.host
    queues = vector_queues(cfg)
    if host.placement != "pinned" or cfg.nic.rx_sort != "vmdq" or queues < 2 \
            or cfg.guest.latency_sensitive:
        return False
    n = cfg.workload.vms
    per_port = [0] * host.nic_ports
    for i in range(cfg.topology.host_vms(n)):
        per_port[cfg.topology.port_of(i, n, host.nic_ports)] += 1
    return sum(min(queues, k + 1) for k in per_port) >= host.cpu.n_cores


def make_placement(cfg) -> Placement:
    host = cfg.host
    return Placement(host.placement, host.cpu.sockets, host.cpu.cores_per_socket, host.irq_core,
                     host.nic_ports, vector_queues(cfg), host.ports_per_card, host.card_node,
                     numa_active=host.numa_io_threshold_pct > 0,
                     exclusive=cfg.topology.host_vms(cfg.workload.vms) * cfg.guest.vcpus
                     if cfg.guest.latency_sensitive else 0,
                     steer=steers_vmdq_vectors(cfg))


@dataclass(frozen=True)
class Slot:
    """Where one context runs and whose memory it touches, in both layouts (``numa_io``
    switches between them at run time; the other policies have one). ``card``: the NIC card
    whose networking contexts it counts among (None: a vCPU)."""

    default: tuple[int, object]   # (core index, home node or tuple of nodes)
    numa: tuple[int, object]
    card: int | None

    def at_start(self, numa_active: bool) -> tuple[int, object]:
        return self.numa if numa_active else self.default


@dataclass(frozen=True)
class Plan:
    """Every context's slot, keyed by context name, computed from the config before the build:
    ``vm{i}.vcpu{k}``, ``vm{i}.net`` (and ``vm{i}.net{k}``), ``nic{p}.rxq{k}.irq``."""

    slots: dict[str, Slot]
    numa_active: bool  # contexts start in the NUMA layout

    def core(self, name: str) -> int:
        return self.slots[name].at_start(self.numa_active)[0]

    def home(self, name: str):
        return self.slots[name].at_start(self.numa_active)[1]


def vm_context_names(cfg, i: int) -> tuple[list[str], list[str]]:
    """VM ``i``'s vCPU and networking context names, in the order they are placed."""
    vcpus = [f"vm{i}.vcpu{k}" for k in range(cfg.guest.vcpus)]
    if is_direct(cfg.vnic.model):  # the guest drives the NIC itself: no networking context
        return vcpus, []
    n_net = min(cfg.hypervisor.tx_contexts_per_vnic, cfg.vnic.tx_queues)
    return vcpus, [f"vm{i}.net", *(f"vm{i}.net{k}" for k in range(1, n_net))]


def vector_name(port: int, queue: int) -> str:
    return f"nic{port}.rxq{queue}.irq"


def make_plan(cfg) -> Plan:
    """The placement plan of ``cfg`` (see the module docstring). Homes: a vCPU works on its
    VM's memory (the node of the VM's first context's core; in the NUMA layout, the card's
    node); a VM's networking context on the VM's memory and on the card's rings; a vector on
    the card's buffers."""
    host = cfg.host
    placer = make_placement(cfg)
    slots: dict[str, Slot] = {}
    n = cfg.workload.vms
    for i in range(cfg.topology.host_vms(n)):  # with their partner VMs on the same host
        port = cfg.topology.port_of(i, n, host.nic_ports)
        card = port // host.ports_per_card
        card_node = host.card_node(card)
        vcpus, nets = vm_context_names(cfg, i)
        placer.start_vm(i, port, 1 if cfg.guest.latency_sensitive else len(vcpus))
        exclusive = cfg.guest.latency_sensitive  # each vCPU on a core of its own
        cores = [(placer.next(exclusive and name in vcpus), name) for name in [*vcpus, *nets]]
        pairs = placer.layouts[i]
        vm_node = {False: pairs[0][0] // host.cpu.cores_per_socket, True: card_node}
        for (default, numa), name in zip(pairs, [*vcpus, *nets]):
            networking = name in nets
            placed = {}
            for layout, core in ((False, default), (True, numa)):
                home = vm_node[layout]
                if networking and home != card_node:
                    home = (home, card_node)
                placed[layout] = (core, home)
            slots[name] = Slot(placed[False], placed[True], card if networking else None)
        assert [c for c, _ in cores] == [slots[n].at_start(placer.numa_active)[0]
                                        for _, n in cores]
    host_vms = cfg.topology.host_vms(n)
    for p in range(0 if is_direct(cfg.vnic.model) else host.nic_ports):  # direct: no vectors
        card = p // host.ports_per_card
        node = host.card_node(card)
        for k in range(cfg.nic.rx_queues):
            default, numa = placer.vector_layouts(p * cfg.nic.rx_queues + k)
            home = node
            vm = k - 1  # VMDq: queue k filters VM k - 1's frames (models.nic._vmdq_queue)
            if placer.steer and k and vm < host_vms and \
                    cfg.topology.port_of(vm, n, host.nic_ports) == p:
                # on its VM's core, and its buffers in its VM's memory (004: "mapped to guest
                # memory"): the handler reads and writes on the VM's node
                default = numa = slots[f"vm{vm}.vcpu0"].default[0]
                home = slots[f"vm{vm}.vcpu0"].default[1]
            slots[vector_name(p, k)] = Slot((default, home), (numa, home), card)
    return Plan(slots, placer.numa_active)


def start_numa_io(model, plan: Plan):
    """With ``host.placement=numa_io``: one group per card (its networking contexts and the
    layouts of its VMs' contexts) and the monitor that switches them
    (``models.numa.NumaIoScheduler``); None otherwise."""
    from models import units
    from models.numa import NumaIoGroup, NumaIoScheduler

    host = model.cfg.host
    if host.placement != "numa_io":
        return None
    by_name = {c.name: c for c in model.contexts}
    cores = model.cpu.cores
    groups = {c: NumaIoGroup(host.card_node(c), [], {False: {}, True: {}}, plan.numa_active)
              for c in range(host.n_cards)}
    vm_card = {vm.index: model.port_of(vm.index) // host.ports_per_card for vm in model.vms}
    for name, slot in plan.slots.items():
        ctx = by_name[name]
        card = slot.card if slot.card is not None else vm_card[int(name[2:].split(".")[0])]
        g = groups[card]
        for layout in (False, True):
            core, home = slot.numa if layout else slot.default
            g.layouts[layout][ctx] = (cores[core], home)
        if slot.card is not None:
            g.networking.append(ctx)
    return NumaIoScheduler(model.env, list(groups.values()), host.numa_io_threshold_pct,
                           units.ms_to_s(host.numa_io_period_ms))

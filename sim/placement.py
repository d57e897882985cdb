"""Where each context starts: the placement policies of ``host.placement``.

Cores are numbered socket-major (core ``i`` is on node ``i // cores_per_socket``); the RX
vectors of all ports, port-major, are ``vector`` 0, 1, ...; card ``c`` holds ports
``c * ports_per_card ...`` and hangs off node ``host.card_node(c)``.

- ``pinned`` (the sources' set-up; 000 pins the VM and the vector to adjoining cores): vector
  ``j`` on core ``irq_core + j``; the VMs' contexts (vCPUs, then networking contexts, VM by VM)
  take the other cores in order, then every core round again (sharing, with world switches).
- ``spread``: vectors as ``pinned``; VM ``i`` goes to node ``i mod sockets`` and takes that
  node's other cores in order, then the node's cores round again.
- ``numa_io``: ``pinned`` as the default layout, plus a *NUMA layout* in which each card's
  vectors and the contexts of the VMs on its ports sit on the card's node (the vectors first,
  then the VMs in order, round the node's cores). ``models.numa.NumaIoScheduler`` switches
  each card's contexts between the two layouts at run time; they start in the NUMA layout when
  the threshold is above 0 (no load yet is below any positive threshold).

The builder asks ``vector_core(j)``, calls ``start_vm(i)`` before building VM ``i`` and then
``next()`` once per context of that VM, in the order it creates them; ``layouts`` keeps, for
every such call, the core of each layout.
"""
from __future__ import annotations

from models.base import sums_by_dst

POLICIES = ("pinned", "spread", "numa_io")


class Placement:
    def __init__(self, policy: str, sockets: int, cores_per_socket: int, irq_core: int,
                 ports: int, rx_queues: int, ports_per_card: int, card_node, numa_active: bool):
        """``card_node(c)`` gives card ``c``'s node; ``numa_active``: start in the NUMA layout."""
        assert policy in POLICIES, policy
        self.policy, self.cps = policy, cores_per_socket
        self.n_cores = sockets * cores_per_socket
        self.sockets, self.rx_queues, self.ports_per_card = sockets, rx_queues, ports_per_card
        self.card_node = card_node
        self.numa_active = policy == "numa_io" and numa_active
        n_vectors = ports * rx_queues
        self._pinned_vectors = [(irq_core + j) % self.n_cores for j in range(n_vectors)]
        reserved = set(self._pinned_vectors)
        self._free = [c for c in range(self.n_cores) if c not in reserved]
        self._i = 0  # pinned cursor over the free cores
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

    def start_vm(self, vm: int, port: int) -> None:
        self._vm = vm
        self._vm_node = vm % self.sockets
        self._vm_card_node = self.node_of_port(port)
        self.layouts[vm] = []

    def next(self) -> int:
        """The core of the next context of the VM being built (in the active layout)."""
        default = self._next_spread() if self.policy == "spread" else self._next_pinned()
        numa = default
        if self.policy == "numa_io":
            node = self._vm_card_node
            numa = self._node_core(node, self._numa_next[node])
            self._numa_next[node] += 1
        self.layouts[self._vm].append((default, numa))
        return numa if self.numa_active else default

    def _next_pinned(self) -> int:
        i, self._i = self._i, self._i + 1
        return self._free[i] if i < len(self._free) else (i - len(self._free)) % self.n_cores

    def _next_spread(self) -> int:
        node = self._vm_node
        free = [c for c in self._free if c // self.cps == node] or \
            list(range(node * self.cps, (node + 1) * self.cps))
        k, self._node_i[node] = self._node_i[node], self._node_i[node] + 1
        if k < len(free):
            return free[k]
        return self._node_core(node, k - len(free))


def make_placement(cfg) -> Placement:
    host = cfg.host
    return Placement(host.placement, host.cpu.sockets, host.cpu.cores_per_socket, host.irq_core,
                     host.nic_ports, cfg.nic.rx_queues, host.ports_per_card, host.card_node,
                     numa_active=host.numa_io_threshold_pct > 0)


def apply_numa(model, placement: Placement, vm_contexts: dict[int, list],
               vectors: dict[int, list]) -> None:
    """Give every context its home node(s), charge the RX copy into a VM's memory, and start
    NUMA I/O when the policy asks for it.

    ``vm_contexts[i]``: VM ``i``'s contexts in the order ``placement.next()`` placed them;
    ``vectors[p]``: port ``p``'s RX vector contexts. Homes: a vCPU works on its VM's memory
    (the node of its first vCPU); a VM's networking context on the VM's memory and on the
    card's rings; a vector on the card's buffers (and, per batch, on the memory of each VM it
    copies into: ``_with_copy_penalty``).
    """
    from models.numa import NumaIoGroup, NumaIoScheduler

    host, cores = model.cfg.host, model.cpu.cores
    groups = {c: NumaIoGroup(host.card_node(c), []) for c in range(host.n_cards)}
    for g in groups.values():
        g.layouts = {False: {}, True: {}}
        g.numa = placement.numa_active
    for i, ctxs in vm_contexts.items():
        vm, port = model.vms[i], model.port_of(i)
        card = port // host.ports_per_card
        card_node, g = host.card_node(card), groups[card]
        pairs = placement.layouts[i]
        assert len(pairs) == len(ctxs), f"vm{i}: {len(ctxs)} contexts, {len(pairs)} placed"
        vm_node = {False: cores[pairs[0][0]].node, True: card_node}
        for ctx, (default, numa) in zip(ctxs, pairs):
            assert ctx.core.index == (numa if placement.numa_active else default), ctx.name
            networking = ctx not in vm.vcpus
            for layout, core in ((False, default), (True, numa)):
                home = vm_node[layout]
                if networking and home != card_node:
                    home = (home, card_node)
                g.layouts[layout][ctx] = (cores[core], home)
            ctx.home_node = g.layouts[placement.numa_active][ctx][1]
            if networking:
                g.networking.append(ctx)
    n_queues = model.cfg.nic.rx_queues
    for p, ctxs in vectors.items():
        card = p // host.ports_per_card
        g = groups[card]
        for k, ctx in enumerate(ctxs):
            ctx.home_node = g.card_node
            default, numa = placement.vector_layouts(p * n_queues + k)
            g.layouts[False][ctx] = (cores[default], g.card_node)
            g.layouts[True][ctx] = (cores[numa], g.card_node)
            g.networking.append(ctx)
    numa = host.numa
    if numa.remote_per_packet_cycles or numa.remote_per_byte_cycles:
        for nic in model.nics:
            for q in nic.rx_queues:
                q.cost = _with_copy_penalty(q.cost, q.context, model.vms)
    if host.placement == "numa_io":
        from models import units
        model.numa_io = NumaIoScheduler(model.env, list(groups.values()),
                                        host.numa_io_threshold_pct,
                                        units.ms_to_s(host.numa_io_period_ms))


def _with_copy_penalty(cost, ctx, vms):
    """The RX handler's cost plus the NUMA penalty of writing each VM's packets into its
    memory, when that memory is on another node than the handler's core."""
    def wrapped(batch, is_interrupt):
        cycles = cost(batch, is_interrupt)
        for dst, (packets, n_bytes) in sums_by_dst(batch).items():
            if not 0 <= dst < len(vms):
                continue
            penalty = ctx.remote_penalty_cycles(packets, n_bytes, vms[dst].vcpus[0].home_node)
            ctx.remote_cycles += penalty  # the context's own count of NUMA penalty cycles
            cycles += penalty
        return cycles
    return wrapped

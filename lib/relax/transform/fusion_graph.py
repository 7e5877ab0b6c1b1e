"""The graph side of FuseOps: a dataflow graph of bindings, its post-dominator tree,
and the partition of its nodes into fusion groups (TVM's GraphPartitioner).

Nodes are listed in post-DFS order (definitions before uses). Each node has a
pattern (an OpPatternKind code from annotate_tir_op_pattern) and its outgoing
edges, each labelled with the pattern of the consuming operator. A node marked
`extern_ref` (a function parameter, a variable that leaves its dataflow block) is
never fused into a later node.

The partition runs three phases over the nodes in order. A node is fused into
its immediate post-dominator when every path between them passes the phase's test:
  phase 0: an out_elementwise_fusable node (matmul, conv2d) takes a chain of
           elementwise/broadcast consumers; elementwise/broadcast nodes join an
           injective or reduction consumer;
  phase 1: injective nodes (and tuples) join injective paths;
  phase 2: injective nodes join a tuple already fused into injective consumers.
A group never grows past `max_fuse_depth` nodes.
"""

from __future__ import annotations

from dataclasses import field

from ..records import record
from .annotate_tir_op_pattern import BROADCAST, COMM_REDUCE, ELEMWISE, INJECTIVE, OPAQUE, OUT_EWISE_FUSABLE, TUPLE

MAX_FUSE_DEPTH = 256


@record(mutable=True, eq=False)
class GraphNode:
    ref: object                     # the Relax expression (a Var or a leaf constant) it stands for
    index: int = -1
    pattern: int = OPAQUE
    extern_ref: bool = False
    outputs: list[tuple["GraphNode", int]] = field(default_factory=list)  # (consumer, edge pattern)


@record(mutable=True, eq=False)
class _DomNode:
    node: GraphNode
    parent: "_DomNode | None"
    depth: int
    pattern: int                    # the combined pattern of the edges to the parent


@record(mutable=True, eq=False)
class Group:
    pattern: int
    root_ref: object
    parent: "Group | None" = None
    anchor_ref: object | None = None
    num_nodes: int = 1

    def find_root(self) -> "Group":
        root = self
        while root.parent is not None:
            root = root.parent
        # Path compression, as union-find does.
        node = self
        while node.parent is not None and node.parent is not root:
            node.parent, node = root, node.parent
        return root


class DataflowGraph:
    """Nodes by the identity of the expression they stand for, in post-DFS order."""

    def __init__(self) -> None:
        self.nodes: list[GraphNode] = []
        self._by_ref: dict[int, GraphNode] = {}

    def get(self, ref) -> GraphNode | None:
        return self._by_ref.get(id(ref))

    def add(self, ref, pattern: int, extern_ref: bool = False) -> GraphNode:
        node = GraphNode(ref, len(self.nodes), pattern, extern_ref)
        self._by_ref[id(ref)] = node
        self.nodes.append(node)
        return node

    @staticmethod
    def add_edge(producer: GraphNode, consumer: GraphNode, pattern: int) -> None:
        producer.outputs.append((consumer, pattern))


def _post_dominator_tree(graph: DataflowGraph) -> list[_DomNode]:
    tree: list[_DomNode | None] = [None] * len(graph.nodes)
    for node in reversed(graph.nodes):
        if node.extern_ref or not node.outputs:
            tree[node.index] = _DomNode(node, None, 1, OPAQUE if node.extern_ref else ELEMWISE)
            continue
        pattern = ELEMWISE
        parent: _DomNode | None = None
        for position, (consumer, edge_pattern) in enumerate(node.outputs):
            other = tree[consumer.index]
            if position == 0:
                parent = other
            else:
                parent, pattern = _common_ancestor(parent, other, pattern)
            pattern = max(pattern, edge_pattern)
        tree[node.index] = _DomNode(node, parent, parent.depth + 1 if parent else 1, pattern)
    return tree


def _common_ancestor(lhs: _DomNode | None, rhs: _DomNode | None, pattern: int):
    while lhs is not rhs:
        if lhs is None or rhs is None:
            return None, pattern
        if lhs.depth < rhs.depth:
            pattern, rhs = max(pattern, rhs.pattern), rhs.parent
        elif rhs.depth < lhs.depth:
            pattern, lhs = max(pattern, lhs.pattern), lhs.parent
        else:
            pattern = max(pattern, lhs.pattern, rhs.pattern)
            lhs, rhs = lhs.parent, rhs.parent
    return lhs, pattern


class GraphPartitioner:
    def __init__(self, graph: DataflowGraph, max_fuse_depth: int = MAX_FUSE_DEPTH):
        self.graph = graph
        self.max_fuse_depth = max_fuse_depth
        self.groups = [Group(node.pattern, node.ref, anchor_ref=node.ref if node.pattern == OUT_EWISE_FUSABLE else None)
                       for node in graph.nodes]

    def partition(self) -> list[Group]:
        tree = _post_dominator_tree(self.graph)
        for phase in range(3):
            self._run_phase(tree, phase)
        return self.groups

    def _run_phase(self, tree: list[_DomNode], phase: int) -> None:
        for node in self.graph.nodes:
            group = self.groups[node.index]
            dom = tree[node.index]
            if group.pattern == OPAQUE or dom.parent is None:
                continue
            sink = dom.parent.node
            if self._fused_size(node, sink) > self.max_fuse_depth:
                continue
            if phase == 2:
                self._fuse_into_tuple(node, sink, group)
                continue
            sink_group = self.groups[sink.index]
            if group.find_root() is sink_group.find_root() or sink_group.pattern == TUPLE:
                continue
            if group.pattern == OUT_EWISE_FUSABLE:
                if phase == 0 and dom.pattern == ELEMWISE and self._check_path(
                        node, sink, lambda kind, is_sink: kind <= BROADCAST):
                    self._commit(node, sink)
            elif group.pattern <= BROADCAST:
                if dom.pattern <= INJECTIVE or dom.pattern == COMM_REDUCE:
                    if self._check_path(node, sink, _elementwise_path):
                        self._commit(node, sink)
            elif group.pattern in (INJECTIVE, TUPLE):
                if phase == 1 and self._check_path(node, sink, lambda kind, is_sink: kind <= INJECTIVE):
                    self._commit(node, sink)

    def _fuse_into_tuple(self, node: GraphNode, sink: GraphNode, group: Group) -> None:
        if group.pattern > INJECTIVE:
            return
        sink_group = self.groups[sink.index]
        sink_root = sink_group.find_root()
        if sink_root.pattern == TUPLE:
            return
        if sink_group.pattern == TUPLE and sink_root.pattern <= INJECTIVE:
            if self._check_path(node, sink, lambda kind, is_sink: kind <= INJECTIVE):
                self._commit(node, sink)

    def _check_path(self, source: GraphNode, sink: GraphNode, condition) -> bool:
        visited: set[int] = set()

        def walk(node: GraphNode) -> bool:
            if node.index in visited:
                return True
            visited.add(node.index)
            if not condition(self.groups[node.index].find_root().pattern, node is sink):
                return False
            if node is sink:
                return True
            return all(walk(consumer) for consumer, _ in node.outputs)

        return all(walk(consumer) for consumer, _ in source.outputs)

    def _commit(self, source: GraphNode, sink: GraphNode) -> None:
        target = self.groups[sink.index]
        visited: set[int] = set()

        def walk(node: GraphNode) -> None:
            if node is sink or node.index in visited:
                return
            visited.add(node.index)
            self._merge(self.groups[node.index], target)
            for consumer, _ in node.outputs:
                walk(consumer)

        walk(source)

    @staticmethod
    def _merge(child: Group, parent: Group) -> None:
        child, parent = child.find_root(), parent.find_root()
        if child is parent:
            return
        parent.num_nodes += child.num_nodes
        child.parent = parent
        if child.anchor_ref is not None:
            parent.anchor_ref = child.anchor_ref
            parent.pattern = max(child.pattern, parent.pattern)

    def _fused_size(self, source: GraphNode, sink: GraphNode) -> int:
        """How many nodes the group would hold if `source` fused into `sink`'s group."""
        visited: set[int] = set()
        count = 0

        def walk(node: GraphNode) -> None:
            nonlocal count
            if node.index in visited:
                return
            visited.add(node.index)
            if node is sink:
                return
            count += self.groups[node.index].num_nodes
            for consumer, _ in node.outputs:
                walk(consumer)

        walk(source)
        return count + self.groups[sink.index].find_root().num_nodes


def _elementwise_path(kind: int, is_sink: bool) -> bool:
    # Parallel branches may be injective; the final consumer may already anchor a
    # matmul or reduction group.
    if not is_sink:
        return kind <= INJECTIVE
    return kind <= INJECTIVE or kind in (COMM_REDUCE, OUT_EWISE_FUSABLE)

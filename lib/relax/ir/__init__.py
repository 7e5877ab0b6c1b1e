"""The IR: Relax and TIR nodes, struct info and the IRModule.

Nodes are immutable dataclasses compared by identity; `structural_equal` and
`structural_hash` compare structure with bound variables up to renaming. The
Visitor and Mutator bases derive traversal from the node fields. Any node
serializes to JSON (`to_json` / `from_json`) and loads back structurally equal.

Relax nodes live here directly (`ir.Var`, `ir.Call`, ...); TIR nodes in the `tir`
namespace (`ir.tir.Var`, `ir.tir.For`, ...), since both have a `Var`.
"""

from . import dtype, tir
from .expr import (
    Binding, BindingBlock, Call, Constant, DataflowBlock, DataflowVar, DataTypeImm, Expr,
    ExternFunc, Function, GlobalVar, If, MatchCast, Op, PrimValue, PyFunction, SeqExpr, ShapeExpr,
    StringImm, Tuple, TupleGetItem, Var, VarBinding, const,
)
from .module import BaseFunc, IRModule
from .node import EMPTY, FrozenDict, Node, field_names, field_values, node
from .struct_info import (
    FuncStructInfo, ObjectStructInfo, PrimStructInfo, ShapeStructInfo, StructInfo,
    TensorStructInfo, TupleStructInfo,
)
from .tir_stmt import PrimFunc
from .analysis import (
    all_global_vars, all_vars, bound_vars, collect, free_symbolic_vars, free_vars, substitute,
)
from .json import from_json, to_json
from .structural import assert_structural_equal, structural_equal, structural_hash
from .visitor import (
    ExprMutator, ExprVisitor, Mutator, StmtExprMutator, StmtExprVisitor, Visitor, post_order, pre_order, walk,
)
from .well_formed import assert_well_formed, check_well_formed

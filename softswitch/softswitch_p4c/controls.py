"""Controls: V1Switch binding, actions, tables, and the pipeline graph.

Control flow becomes BMv2's graph of tables and conditionals: statements
outside tables are grouped into synthetic actions applied by keyless
`tbl_*` tables, `if` becomes a conditional node, `t.apply().hit` and
`switch (t.apply().action_run)` become `next_tables` by `__HIT__`/`__MISS__`
or by action.
"""
from dataclasses import dataclass, field
from typing import Any

from . import ast as A
from .ast import describe
from .desugar import contains_apply
from .errors import CompileError, unsupported
from .exprs import Ctx
from .stmts import source_info
from .symbols import ActionSym, BlockSym, Scope, TableSym
from .types import Bits, ExternT, IntT, StructT, storage_width
from .values import FieldRef, HeaderRef, Val, as_bool, hexstr, mask_of

END = "__END__"
_PROFILE_TYPES = ("action_profile", "action_selector")
DEFAULT_TABLE_SIZE = 1024


@dataclass
class ControlInfo:
    name: str
    decl: Any
    scope: Any
    tables: list = field(default_factory=list)
    conditionals: list = field(default_factory=list)
    applied: set = field(default_factory=set)
    temporaries: dict = field(default_factory=dict)  # split$N -> its name in this copy
    parent: Any = None                               # enclosing control of a sub-control
    return_to: Any = None                            # _Return of an inlined sub-control


class _Seq:
    """Chains graph fragments: `entry` is the first node, `exits` the open next-slots."""

    def __init__(self):
        self.entry = None
        self.exits = None

    def add(self, entry, exits):
        if entry is None:
            return
        if self.entry is None:
            self.entry = entry
        else:
            _patch(self.exits, entry)
        self.exits = exits

    @property
    def terminated(self):
        return self.exits == [] and self.entry is not None


class _Return:
    """Where `return` inside an inlined sub-control leads: the sub-control's continuation,
    known only when its caller links its exits; the slots wait here until then."""

    def __init__(self):
        self.slots = []


def _link(slot, target):
    if isinstance(target, _Return):
        target.slots.append(slot)
    else:
        slot(None if target == END else target)


def _patch(exits, target):
    for slot in exits or ():
        _link(slot, target)


class ControlMixin:
    # ------------------------------------------------------------ V1Switch
    def lower_main(self, main):
        if not isinstance(main, Val) or "instance" not in main.extra:
            raise CompileError(None, "'main' must be a package instance")
        inst = main.extra["instance"]
        pkg = main.type.decl
        if pkg.name != "V1Switch":
            raise unsupported(inst.loc, f"package '{pkg.name}' (only V1Switch is supported)")
        blocks = [self.block_arg(a, inst) for a in inst.args]
        self.bind_storage(blocks[0])
        kinds = [A.ParserDecl] + [A.ControlDecl] * 5
        for block, kind, role, arg in zip(blocks, kinds, V1SWITCH_ROLES, inst.args):
            if not isinstance(block, kind):
                raise CompileError(arg.loc, f"argument '{role}' of V1Switch must be a "
                                            f"{kind.__name__[:-4].lower()}")
        self.lower_parser(blocks[0])
        self.lower_checksums(blocks[1], verify=True)
        self.lower_pipeline("ingress", blocks[2])
        self.lower_pipeline("egress", blocks[3])
        self.lower_checksums(blocks[4], verify=False)
        self.lower_deparser(blocks[5])

    def block_arg(self, arg, inst):
        if not (isinstance(arg, A.Call) and isinstance(arg.func, A.Name) and not arg.args):
            raise unsupported(arg.loc, "V1Switch arguments other than `Block()` instantiations")
        sym = self.globals.lookup(arg.func.name)
        if not isinstance(sym, BlockSym):
            raise CompileError(arg.loc, f"undeclared parser or control '{arg.func.name}'")
        d = sym.decl
        if isinstance(d, A.ParserDecl) and not d.states or \
                isinstance(d, A.ControlDecl) and d.body is None:
            raise CompileError(arg.loc, f"'{d.name}' is only a type declaration, not a "
                                        f"{'parser' if isinstance(d, A.ParserDecl) else 'control'}")
        return d

    def bind_storage(self, parser):
        if len(parser.params) != 4:
            raise CompileError(parser.loc, "the V1Switch parser needs 4 parameters "
                                           "(packet_in, headers, metadata, standard_metadata)")
        self.hdr_type = self.resolve_type(parser.params[1].type)
        self.meta_type = self.resolve_type(parser.params[2].type)
        for p, t in ((parser.params[1], self.hdr_type), (parser.params[2], self.meta_type)):
            if not (isinstance(t, StructT) and t.kind == "struct"):
                raise CompileError(p.type.loc, f"parser parameter '{p.name}' must be a struct, "
                                               f"not {t}")
        sm_type = self.resolve_type(A.TypeRef(parser.loc, "standard_metadata_t"))
        self.sm_type = sm_type
        self.hdr_val = self.layout(self.hdr_type, "", False, "hdr")
        self.user_meta = self.layout(self.meta_type, "userMetadata", False, self.meta_type.name)
        self.sm_val = Val(sm_type, ref=self.add_header_instance(
            "standard_metadata", sm_type, True, "standard_metadata"))

    def bind_params(self, decl, scope):
        """Bind a block's parameters to the program-wide storage by type."""
        for p in decl.params:
            t = self.resolve_type(p.type, scope)
            if t is self.hdr_type:
                v = self.hdr_val
            elif t is self.meta_type:
                v = self.user_meta
            elif t is self.sm_type:
                v = self.sm_val
            elif isinstance(t, ExternT) and t.name in ("packet_in", "packet_out"):
                v = Val(t, extra={"packet": t.name})
            else:
                raise CompileError(p.type.loc, f"parameter '{p.name}' of '{decl.name}' has type "
                                               f"{t}, which does not match the V1Switch "
                                               f"architecture")
            scope.declare(p.name, v, p.loc)

    # ------------------------------------------------------------ control scope
    def control_scope(self, decl):
        scope = Scope(self.globals)
        self.bind_params(decl, scope)
        info = ControlInfo(decl.name, decl, scope)
        ctx = Ctx(scope, None, "control", info)
        for d in decl.locals:
            self.declare_control_local(d, info, ctx)
        return info

    def declare_control_local(self, d, info, ctx):
        scope = info.scope
        if isinstance(d, A.ActionDecl):
            scope.declare(d.name, ActionSym(d, info, scope), d.loc)
        elif isinstance(d, A.TableDecl):
            scope.declare(d.name, TableSym(d, self.qualified(d.annos, d.name, info), info, scope),
                          d.loc)
        elif isinstance(d, A.ConstDecl):
            t = self.resolve_type(d.type, scope)
            scope.declare(d.name, self.eval_const_decl(d, t, scope), d.loc)
        elif isinstance(d, A.Instance):
            self.declare_instance(d, scope, info)
        elif isinstance(d, A.VarDecl):            # its initializer: decl.inits
            t = self.resolve_type(d.type, scope)
            scope.declare(d.name, self.declare_local(d, t, ctx), d.loc)
        else:
            raise unsupported(d.loc, f"{type(d).__name__} in a control")

    # ------------------------------------------------------------ pipelines
    def lower_pipeline(self, name, decl):
        info = self.control_scope(decl)
        ctx = Ctx(Scope(info.scope), None, "control", info)
        seq = self.g_stmts(decl.inits + decl.body.stmts, ctx)
        _patch(seq.exits, END)
        init = None if seq.entry in (None, END) else seq.entry
        self.json["pipelines"].append({
            "name": name, "id": len(self.json["pipelines"]),
            "source_info": source_info(decl.loc), "init_table": init,
            "tables": info.tables, "action_profiles": self.take_action_profiles(),
            "conditionals": info.conditionals})

    def take_action_profiles(self):
        """The action profiles of the pipeline just lowered (each pipeline has its own)."""
        profiles, self.action_profiles = self.action_profiles, []
        return profiles

    def g_stmts(self, stmts, ctx):
        seq, run = _Seq(), []
        for s in self.steps(stmts, ctx):
            if self.is_simple(s, ctx):
                run.append(s)
                continue
            self.flush_run(run, ctx, seq)
            run = []
            if seq.terminated:
                break
            entry, exits = self.g_stmt(s, ctx)
            seq.add(entry, exits)
            if seq.terminated:
                break
        if not seq.terminated:
            self.flush_run(run, ctx, seq)
        return seq

    def steps(self, stmts, ctx):
        """The statements of a list as lowered: each one desugar.split_conditions split
        (its table tests and function calls made explicit steps) is what it became, its
        temporaries named here, in the order reached (`cond$N`: an inlined copy or a loop
        iteration names its own); then run-time stack indices are expanded (hsindex; after
        the split, so that a table apply is not copied into each branch of the chain)."""
        out = []
        for s in stmts:
            if not isinstance(s, A.SplitStmt):
                out.append(s)
                continue
            if s.error is not None:
                raise s.error
            for name in s.temporaries:
                ctx.control.temporaries[name] = f"cond${self.split_count}"
                self.split_count += 1
            out += s.stmts
        return self.hsindex.expand(out, ctx.scope)

    def is_simple(self, s, ctx):
        if isinstance(s, (A.Assign, A.VarDecl, A.Temp, A.Empty)):
            return True
        if isinstance(s, A.CallStmt):
            return not (self.table_of_apply(s.call, ctx) or self.const_action_call(s.call, ctx))
        return False

    def flush_run(self, run, ctx, seq):
        if not run or all(isinstance(s, A.Empty) for s in run):
            return
        prims = []
        actx = Ctx(ctx.scope, prims, "control", ctx.control)
        for s in run:
            self.lower_stmt(s, actx)
        if not prims:
            return
        seq.add(*self.synthetic_table(ctx.control, "act", prims, run[0].loc))

    def synthetic_table(self, info, base, prims, loc, action=None, action_data=()):
        if action is None:
            action = self.add_action_json(self.unique_name(base), [], prims, loc)
        name = self.unique_name(f"tbl_{action['name'].split('.')[-1]}")
        table = self.table_json(name, loc, [], "exact", [action], DEFAULT_TABLE_SIZE)
        table["default_entry"] = {"action_id": action["id"], "action_const": True,
                                  "action_data": list(action_data), "action_entry_const": True}
        info.tables.append(table)
        return name, [self.all_next_slot(table)]

    def add_action_json(self, name, runtime_data, prims, loc):
        action = {"name": name, "id": len(self.json["actions"]), "runtime_data": runtime_data,
                  "primitives": prims, "source_info": source_info(loc)}
        self.json["actions"].append(action)
        return action

    def table_json(self, name, loc, keys, match_type, actions, size):
        return {"name": name, "id": self.next_table_id(), "source_info": source_info(loc),
                "key": keys, "match_type": match_type, "type": "simple", "max_size": size,
                "with_counters": False, "support_timeout": False, "direct_meters": None,
                "action_ids": [a["id"] for a in actions], "actions": [a["name"] for a in actions],
                "base_default_next": None, "next_tables": {a["name"]: None for a in actions},
                "default_entry": None}

    def next_table_id(self):
        self.table_count = getattr(self, "table_count", 0) + 1
        return self.table_count - 1

    def all_next_slot(self, table):
        def slot(target):
            table["base_default_next"] = target
            for k in table["next_tables"]:
                table["next_tables"][k] = target
        return slot

    def key_slot(self, table, key):
        def slot(target):
            table["next_tables"][key] = target
        return slot

    # ------------------------------------------------------------ graph statements
    def g_stmt(self, s, ctx):
        if isinstance(s, A.Block):
            inner = Ctx(Scope(ctx.scope), None, "control", ctx.control)
            seq = self.g_stmts(s.stmts, inner)
            return seq.entry, seq.exits
        if isinstance(s, A.If):
            return self.g_if(s, ctx)
        if isinstance(s, A.SwitchChain):
            return self.g_value_switch(s, ctx)
        if isinstance(s, A.Switch):
            return self.g_switch(s, ctx)
        if isinstance(s, (A.For, A.ForIn)):
            return self.g_stmt(A.Block(s.loc, self.unroller.unroll(s, ctx.scope)), ctx)
        if isinstance(s, A.Return):                     # with no value: check.py
            if ctx.control.parent is not None:           # ends the sub-control's apply
                return ctx.control.return_to, []
            return END, []
        if isinstance(s, A.Exit):
            prims = [{"op": "exit", "parameters": [], "source_info": source_info(s.loc)}]
            name, _ = self.synthetic_table(ctx.control, "act", prims, s.loc)
            return name, []
        if isinstance(s, A.CallStmt):
            tsym = self.table_of_apply(s.call, ctx)
            if tsym:
                entry, table = self.apply_table(tsym, s.call)
                return entry, [self.all_next_slot(table)]
            return self.g_action_call(s.call, ctx)
        if isinstance(s, A.InlinedBlock):
            return self.g_subcontrol(ctx.scope.lookup(s.call.func.expr.name), s, ctx)
        raise unsupported(s.loc, f"statement {type(s).__name__} in a control")

    def table_of_apply(self, call, ctx):
        f = call.func
        if isinstance(f, A.Member) and f.name == "apply" and isinstance(f.expr, A.Name):
            sym = ctx.scope.lookup(f.expr.name)
            if isinstance(sym, TableSym):
                return sym
        return None

    def g_subcontrol(self, sub, s, ctx):
        """Lower an application's copy of a sub-control (inline.py) into the enclosing
        pipeline graph (p4c style: its tables, actions and externs are named
        `<Outer>.<instance>.<name>`). Applied again, its next copy is named
        `<instance>_N` (its extern instances shared); tables can be applied only once in
        BMv2, so a control with tables can be applied only once."""
        call, d = s.call, s.inlined.decl
        if sub.applied and any(isinstance(x, A.TableDecl) for x in d.locals):
            raise unsupported(call.loc, f"applying control instance '{sub.name}' (which has "
                                        f"tables) more than once")
        outer = ctx.control
        bound = self.bind_args(call, d.params, sub.name, Ctx(ctx.scope))
        scope = Scope(self.globals)
        for p in d.ctor_params or []:
            scope.declare(p.name, sub.ctor_args[p.name], p.loc)
        copy_in = []
        copy_out = self.bind_callee_params(d.params, bound, s.inlined.copies, scope,
                                    lambda *pair: copy_in.append(pair))
        name = f"{sub.owner_name}.{sub.name}" + (f"_{sub.applied - 1}" if sub.applied else "")
        sub.applied += 1
        info = ControlInfo(name, d, scope, outer.tables, outer.conditionals, outer.applied, {},
                           outer, _Return())
        for local in d.locals:
            if isinstance(local, A.Instance) and local.name in sub.externs:
                scope.declare(local.name, sub.externs[local.name], local.loc)
                continue
            self.declare_control_local(local, info, Ctx(scope, None, "control", info))
            if isinstance(local, A.Instance):
                sub.externs[local.name] = scope.lookup(local.name)
        body = _Seq()
        body.add(*self.copy_steps(copy_in, ctx, call.loc))
        seq = self.g_stmts(d.inits + d.body.stmts,
                           Ctx(Scope(scope), None, "control", info))
        if seq.entry is not info.return_to:              # `return` first: nothing runs
            body.add(seq.entry, (seq.exits or []) + info.return_to.slots)
        body.add(*self.copy_steps(copy_out, ctx, call.loc))
        return body.entry, body.exits

    def copy_steps(self, pairs, ctx, loc):
        """A synthetic table assigning each (destination, source) pair, or nothing."""
        if not pairs:
            return None, None
        prims = []
        actx = Ctx(ctx.scope, prims, "control", ctx.control)
        for dst, src, ploc in pairs:
            self.assign(actx, dst, src, ploc)
        return self.synthetic_table(ctx.control, "act", prims, loc)

    def const_action_call(self, call, ctx):
        """An action called with constant arguments gets its own `tbl_<action>` (p4c style)."""
        if not isinstance(call.func, A.Name):
            return None
        sym = ctx.scope.lookup(call.func.name)
        if not isinstance(sym, ActionSym):
            return None
        try:
            values = [self.const_value(a, ctx.scope) for a in call.args]
        except CompileError:
            return None
        if all(v is not None for v in values):
            return sym
        return None

    def g_action_call(self, call, ctx):
        sym = self.const_action_call(call, ctx)
        d = sym.decl
        bound = self.bind_args(call, d.params, d.name, Ctx(ctx.scope))
        if any(p.direction for p in d.params):
            prims = []
            self.inline_action(sym, call, Ctx(ctx.scope, prims, "control", ctx.control))
            return self.synthetic_table(ctx.control, "act", prims, call.loc)
        action = self.action_json(sym)
        data = [hexstr(int(bound[p.name].const), action["runtime_data"][i]["bitwidth"])["value"]
                for i, p in enumerate(d.params)]
        return self.synthetic_table(ctx.control, None, None, call.loc, action, data)

    def g_if(self, s, ctx):
        hit = self.hit_condition(s.cond, ctx)
        if hit is not None:
            tsym, want_hit = hit
            entry, table = self.apply_table(tsym, s.cond)
            table["next_tables"] = {"__HIT__": None, "__MISS__": None}
            t_entry, t_exits = self.g_branch(s.then, ctx)
            f_entry, f_exits = self.g_branch(s.other, ctx)
            hit_key, miss_key = ("__HIT__", "__MISS__") if want_hit else ("__MISS__", "__HIT__")
            return entry, self.branch_exits(
                table, [(hit_key, t_entry, t_exits), (miss_key, f_entry, f_exits)])
        cond = self.eval_value(s.cond, Ctx(ctx.scope, None, "control", ctx.control))
        if cond.const is not None:
            branch = s.then if cond.const else s.other
            return self.g_branch(branch, ctx) if branch is not None else (None, None)
        node = {"name": self.unique_name("node"), "id": self.next_cond_id(),
                "source_info": source_info(s.cond.loc), "expression": as_bool(cond),
                "true_next": None, "false_next": None}
        ctx.control.conditionals.append(node)
        t_entry, t_exits = self.g_branch(s.then, ctx)
        f_entry, f_exits = self.g_branch(s.other, ctx)
        return node["name"], self.branch_exits_cond(node, t_entry, t_exits, f_entry, f_exits)

    def next_cond_id(self):
        self.cond_count = getattr(self, "cond_count", 0) + 1
        return self.cond_count - 1

    def g_branch(self, stmt, ctx):
        if stmt is None:
            return None, None
        stmts = stmt.stmts if isinstance(stmt, A.Block) else [stmt]
        seq = self.g_stmts(stmts, Ctx(Scope(ctx.scope), None, "control", ctx.control))
        return seq.entry, seq.exits

    def branch_exits_cond(self, node, t_entry, t_exits, f_entry, f_exits):
        exits = []
        for key, entry, ex in (("true_next", t_entry, t_exits), ("false_next", f_entry, f_exits)):
            if entry is None:
                exits.append(lambda target, key=key: node.__setitem__(key, target))
            else:
                _link(lambda target, key=key: node.__setitem__(key, target), entry)
                exits += ex or []
        return exits

    def branch_exits(self, table, branches):
        exits = []
        for key, entry, ex in branches:
            if entry is None:
                exits.append(self.key_slot(table, key))
            else:
                _link(lambda target, key=key: table["next_tables"].__setitem__(key, target),
                      entry)
                exits += ex or []
        return exits

    def hit_condition(self, cond, ctx):
        negate = False
        while isinstance(cond, A.Unary) and cond.op == "!":
            negate, cond = not negate, cond.expr
        if isinstance(cond, A.Member) and cond.name in ("hit", "miss") and \
                isinstance(cond.expr, A.Call):
            tsym = self.table_of_apply(cond.expr, ctx)
            if tsym:
                return tsym, (cond.name == "hit") != negate
        if contains_apply(cond):
            raise unsupported(cond.loc, "table apply inside a complex condition "
                                        "(use `if (t.apply().hit)` alone)")
        return None

    def g_value_switch(self, s, ctx):
        """A switch on a value (its type: check.py), as desugar.switches_as_ifs wrote it
        and order.py left it (a value with side effects read once before): the value is
        evaluated here without primitives, as each label's test reads it again; then its
        if-chain (a block when only `default` has a body)."""
        self.eval_value(s.expr, Ctx(ctx.scope, None, "control", ctx.control))
        return self.g_stmt(s.chain, ctx)

    def g_switch(self, s, ctx):
        """A switch on `t.apply().action_run` (desugar.switches_as_ifs rewrote the others
        but those on another table apply result, refused here)."""
        e = s.expr
        if not (isinstance(e, A.Member) and e.name == "action_run" and
                isinstance(e.expr, A.Call) and self.table_of_apply(e.expr, ctx)):
            raise unsupported(s.loc, "switch on a table apply result other than action_run")
        tsym = self.table_of_apply(e.expr, ctx)
        table_entry, table = self.apply_table(tsym, e.expr)
        branches, pending_labels, default = [], [], None
        for case in s.cases:
            pending_labels.append(case)
            if case.body is None:
                continue
            entry, exits = self.g_branch(case.body, ctx)
            for c in pending_labels:
                if isinstance(c.label, A.DefaultExpr):
                    default = (entry, exits)
                else:
                    branches.append((self.switch_label(c, tsym, table), entry, exits))
            pending_labels = []
        if pending_labels:
            for c in pending_labels:
                if not isinstance(c.label, A.DefaultExpr):
                    branches.append((self.switch_label(c, tsym, table), None, None))
        return table_entry, self.switch_exits(table, branches, default)

    def switch_label(self, case, tsym, table):
        """The JSON name of the table's action a case names (check.py: one of its actions)."""
        return self.action_json(tsym.scope.lookup(case.label.name))["name"]

    def switch_exits(self, table, branches, default):
        listed = {key for key, _, _ in branches}
        exits = self.branch_exits(table, branches)
        rest = [k for k in table["next_tables"] if k not in listed]

        def rest_slot(target):
            table["base_default_next"] = target
            for k in rest:
                table["next_tables"][k] = target
        if default is None or default[0] is None:
            exits.append(rest_slot)
        else:
            _link(rest_slot, default[0])
            exits += default[1] or []
        return exits

    # ------------------------------------------------------------ tables
    def apply_table(self, tsym, at):
        info = tsym.control
        if tsym.name in info.applied:
            raise unsupported(at.loc, f"applying table '{tsym.decl.name}' more than once")
        info.applied.add(tsym.name)
        key_temps, prims = [], []
        table = self.lower_table(tsym, key_temps, prims)
        info.tables.append(table)
        if not key_temps and not prims:
            return table["name"], table
        ctx = Ctx(tsym.scope, prims, "control", info)
        for tmp, value, loc in key_temps:
            self.assign(ctx, tmp, value, loc)
        entry, exits = self.synthetic_table(info, "act", prims, at.loc)
        _patch(exits, table["name"])
        return entry, table

    def lower_table(self, tsym, key_temps, prims):
        """The table's JSON; the keys computed before it is applied go to `key_temps`
        (temporary, value, loc), the primitives of their side effects to `prims`."""
        d = tsym.decl
        props = self.table_properties(d)       # an actions property: check.py
        selector_inputs = []
        keys, p4keys = self.table_keys(tsym, props.get("key"), key_temps, prims,
                                       selector_inputs)
        actions, refs = self.table_actions(tsym, props["actions"])
        match_type = self.table_match_type(d, keys, props.get("key"))
        size = self.table_size(tsym, props.get("size"))
        table = self.table_json(tsym.name, d.loc, keys, match_type, actions, size)
        p4 = {"sym": tsym, "keys": p4keys, "actions": refs, "size": size, "is_const": False,
              "has_entries": "entries" in props, "const_default": None, "direct": [],
              "json": table, "selector_inputs": selector_inputs}
        self.table_default(tsym, props.get("default_action"), table, refs, p4)
        if "entries" in props:
            table["entries"] = self.table_entries(tsym, props["entries"], keys, match_type)
            p4["is_const"] = props["entries"].is_const
            if "size" not in props:                  # p4c: an unsized table holds its entries
                table["max_size"] = len(table["entries"])
        self.table_extras(tsym, props, table, p4)
        if not A.find_annotation(d.annos, "hidden"):
            self.tables_info.append(p4)
        return table

    def table_properties(self, d):
        """name -> property (each named once: check.py)."""
        return {p.name: p for p in d.properties}

    def selector_input(self, v, k, key_temps):
        """The field the action selector hashes for key `k` of value `v`: the field
        itself, or a scalar computed before the apply (as key_target: p4c's SimplifyKey)."""
        if not v.type.is_scalar or isinstance(v.type, IntT):
            raise CompileError(k.loc, f"table key must be a fixed-width scalar, not {v.type}")
        if isinstance(v.ref, FieldRef):
            return v.ref.json()
        tmp = self.new_scalar(self.unique_name("key"), v.type)
        key_temps.append((tmp, v, k.loc))
        return tmp.ref.json()

    def table_keys(self, tsym, prop, key_temps, prims, selector_inputs):
        keys, p4 = [], []
        ctx = Ctx(tsym.scope, None, "control", tsym.control)
        for k in prop.value if prop else []:      # match kinds: check.py
            if k.prep:                              # its side effects (order.py), run first
                ctx = Ctx(Scope(ctx.scope), prims, "control", tsym.control)
                for s in k.prep:
                    self.lower_stmt(s, ctx)
            v = self.eval_value(k.expr, ctx)
            if k.match_kind == "selector":          # hashed by the action selector
                selector_inputs.append(self.selector_input(v, k, key_temps))
                continue
            if not v.type.is_scalar or isinstance(v.type, IntT):
                raise CompileError(k.loc, f"table key must be a fixed-width scalar, not {v.type}")
            target, mask, width = self.key_target(v, k, key_temps, ctx)
            name = self.key_name(k)
            kind = "ternary" if k.match_kind == "optional" else k.match_kind
            keys.append({"match_type": kind, "name": name, "target": target, "mask": mask})
            p4.append({"name": name, "bitwidth": width, "match_type": k.match_kind,
                       "annos": k.annos, "type": v.type})
        return keys, p4

    def key_name(self, k):
        a = A.find_annotation(k.annos, "name")
        if a and a.args and isinstance(a.args[0], A.StrLit):
            return a.args[0].value
        if k.written is not None:                   # order.py moved its side effects
            return k.written
        if isinstance(k.expr, A.Call) and isinstance(k.expr.func, A.Member) and \
                k.expr.func.name == "isValid":
            return f"{describe(k.expr.func.expr)}.$valid$"
        return describe(k.expr)

    def key_target(self, v, k, key_temps, ctx):
        """(JSON target, mask, P4Info width) of a key, as p4c's SimplifyKey leaves it: a
        field, `field & constant` (masked, full width) or isValid() stay in the table;
        anything else (slices included) is computed into a scalar before the apply."""
        if isinstance(v.ref, FieldRef):
            return [v.ref.header, v.ref.field], None, storage_width(v.type)
        masked = self.masked_field(k.expr, ctx)
        if masked is not None:
            field, mask = masked
            return [field.ref.header, field.ref.field], \
                hexstr(mask, field.type.width)["value"], field.type.width
        j = v.json
        if v.is_boolexpr and j["value"]["op"] == "d2b" and j["value"]["right"]["type"] == "field":
            return list(j["value"]["right"]["value"]), None, 1
        # p4c style: other expressions are computed into a scalar before the table
        tmp = self.new_scalar(self.unique_name("key"), v.type)
        key_temps.append((tmp, v, k.loc))
        return [tmp.ref.header, tmp.ref.field], None, storage_width(v.type)

    def masked_field(self, e, ctx):
        if not (isinstance(e, A.Binary) and e.op == "&"):
            return None
        left, right = self.eval_value(e.left, ctx), self.eval_value(e.right, ctx)
        if right.const is None:
            left, right = right, left
        if isinstance(left.ref, FieldRef) and right.const is not None and \
                isinstance(left.type, Bits):
            return left, int(right.const) & mask_of(left.type.width)
        return None

    def table_match_type(self, d, keys, prop):
        kinds = {k["match_type"] for k in keys}
        if "range" in kinds:
            return "range"
        if "ternary" in kinds:
            return "ternary"
        if "lpm" in kinds:
            return "lpm"
        return "exact"

    def table_size(self, tsym, prop):
        if prop is None:
            return DEFAULT_TABLE_SIZE
        size = self.const_value(prop.value, tsym.scope)
        if size is None or int(size) <= 0:
            raise CompileError(prop.value.loc, "table size must be a positive constant")
        return int(size)

    def table_actions(self, tsym, prop):
        actions, refs = [], []
        for ref in prop.value:
            sym = self.resolve_action_ref(tsym, ref)
            if ref.args:
                self.bind_table_action(sym, ref, tsym)
            action = self.action_json(sym)       # each listed once: check.py
            actions.append(action)
            scope = "DEFAULT_ONLY" if A.find_annotation(ref.annos, "defaultonly") else \
                "TABLE_ONLY" if A.find_annotation(ref.annos, "tableonly") else "TABLE_AND_DEFAULT"
            refs.append({"name": action["name"], "scope": scope, "annos": ref.annos, "sym": sym})
        return actions, refs

    def resolve_action_ref(self, tsym, ref):
        scope = tsym.scope.root() if ref.name.absolute else tsym.scope
        return scope.lookup(ref.name.name)          # an action: the checker's rule

    def table_default(self, tsym, prop, table, refs, p4):
        if prop is None:
            sym = self.globals.lookup("NoAction")
            action = self.action_json(sym)
            if action["name"] not in table["next_tables"]:
                table["actions"].append(action["name"])
                table["action_ids"].append(action["id"])
                table["next_tables"][action["name"]] = None
                refs.append({"name": action["name"], "scope": "DEFAULT_ONLY", "annos": [],
                             "sym": sym})
            table["default_entry"] = {"action_id": action["id"], "action_const": False,
                                      "action_data": [], "action_entry_const": False}
            p4["default_action"] = (action["name"], [])
            return
        ref = prop.value
        if not isinstance(ref, (A.Call, A.Name)):
            raise CompileError(prop.loc, "default_action must be an action call")
        call = ref if isinstance(ref, A.Call) else A.Call(ref.loc, ref, [], [])
        if not isinstance(call.func, A.Name):
            raise CompileError(call.loc, "default_action must name an action")
        sym = self.resolve_action_ref(tsym, A.ActionRef(call.func.loc, [], call.func, None))
        action = self.action_json(sym)                 # listed: check.py
        data = self.const_action_data(sym, call, tsym)
        table["default_entry"] = {"action_id": action["id"], "action_const": prop.is_const,
                                  "action_data": data, "action_entry_const": prop.is_const}
        if prop.is_const:
            p4["const_default"] = action["name"]
        p4["default_action"] = (action["name"], data)

    def const_action_data(self, sym, call, tsym):
        d = sym.decl
        bound = self.bind_args(call, d.params, d.name, Ctx(tsym.scope))
        data = []
        for p in d.params:
            v = bound[p.name]
            if p.direction:                  # bound in the table's actions list instead
                continue
            if v.const is None:
                raise CompileError(call.loc, f"argument '{p.name}' of '{d.name}' must be a "
                                             f"compile-time constant here")
            data.append(hexstr(int(v.const), storage_width(v.type))["value"])
        return data

    def table_extras(self, tsym, props, table, p4):
        for name, prop in props.items():
            if name in ("key", "actions", "default_action", "entries", "size",
                        "largest_priority_wins", "priority_delta"):
                continue
            if name == "counters":
                self.bind_direct(tsym, prop, "direct_counter", table, p4)
            elif name == "meters":
                self.bind_direct(tsym, prop, "direct_meter", table, p4)
            elif name == "support_timeout":
                table["support_timeout"] = bool(self.const_value(prop.value, tsym.scope))
            elif name == "implementation":
                self.bind_implementation(tsym, prop, table, p4)
            else:
                raise unsupported(prop.loc, f"table property '{name}'")

    def bind_implementation(self, tsym, prop, table, p4):
        """`implementation = ap;` with an action_profile / action_selector instance: an
        indirect table sharing the pipeline's `action_profiles` entry (p4c's JSON)."""
        inst = None
        if isinstance(prop.value, A.Name):
            inst = self.eval_expr(prop.value, Ctx(tsym.scope)).extra.get("extern")
        elif isinstance(prop.value, A.Call) and isinstance(prop.value.func, A.Name) and \
                prop.value.func.name in _PROFILE_TYPES:
            inst = self.anonymous_profile(prop, tsym)
        if inst is None or inst.type.name not in _PROFILE_TYPES:
            raise unsupported(prop.loc, f"table implementation '{describe(prop.value)}' "
                                        f"(only an action_profile/action_selector)")
        if "entries" in table:
            raise CompileError(prop.loc, "a table with an implementation cannot have entries")
        selector = inst.type.name == "action_selector"
        table["type"] = "indirect_ws" if selector else "indirect"
        table["action_profile"] = inst.name
        table.pop("default_entry", None)           # BMv2 sets defaults of simple tables only
        inst.info["tables"].append(table["name"])
        p4["implementation"] = inst
        profiles = self.action_profiles
        if any(ap["name"] == inst.name for ap in profiles):
            return
        ap = {"name": inst.name, "id": len(profiles), "source_info": source_info(inst.loc),
              "max_size": inst.info["size"]}
        if selector:
            ap["selector"] = {"algo": inst.info["algo"], "input": p4["selector_inputs"]}
        profiles.append(ap)

    def anonymous_profile(self, prop, tsym):
        """`implementation = action_profile(N);` (an instance without a declaration): named
        by the property's @name, else `action_profile_<n>` (p4c's fresh name; p4c writes no
        P4Info for it without @name, softswitch-p4c lists it under that name)."""
        call = prop.value
        name = f"action_profile_{self.anonymous_profiles}"
        self.anonymous_profiles += 1
        decl = A.Instance(call.loc, prop.annos, A.TypeRef(call.func.loc, call.func.name),
                          call.args, name)
        t = self.resolve_type(decl.type, tsym.scope)
        return self.make_extern_instance(decl, t, tsym.scope, None)

    def bind_direct(self, tsym, prop, kind, table, p4):
        v = self.eval_expr(prop.value, Ctx(tsym.scope))
        inst = v.extra.get("extern")
        if inst is None or inst.type.name != kind:
            raise CompileError(prop.value.loc, f"table property '{prop.name}' needs a {kind} "
                                               f"instance")
        if inst.info.get("table"):
            raise CompileError(prop.value.loc, f"{kind} '{inst.name}' is already attached to "
                                               f"table '{inst.info['table']}'")
        inst.info["table"] = table["name"]
        entry = {"name": inst.name, "id": 0, "source_info": source_info(inst.loc),
                 "is_direct": True, "binding": table["name"]}
        if kind == "direct_counter":
            table["with_counters"] = True            # p4c gives direct counters no size
            entry["id"] = len(self.json["counter_arrays"])
            self.json["counter_arrays"].append(entry)
        else:
            table["direct_meters"] = inst.name
            entry.update({"size": table["max_size"], "rate_count": 2,
                          "type": inst.info["unit"]})
            if inst.info.get("result_target"):
                entry["result_target"] = inst.info["result_target"]
            entry["id"] = len(self.json["meter_arrays"])
            self.json["meter_arrays"].append(entry)
        p4["direct"].append(inst)

    # ------------------------------------------------------------ const entries
    def table_entries(self, tsym, prop, keys, match_type):
        entries, prios = [], []
        ctx = Ctx(tsym.scope)
        for i, e in enumerate(prop.value):
            if len(e.keys) != len(keys):
                raise CompileError(e.loc, f"entry has {len(e.keys)} key values, table "
                                          f"'{tsym.decl.name}' has {len(keys)} keys")
            match_key = [self.entry_key(k, kv, ctx) for k, kv in zip(keys, e.keys)]
            sym = self.resolve_action_ref(tsym, e.action)
            action = self.action_json(sym)             # listed: check.py
            call = A.Call(e.action.loc, e.action.name, [], e.action.args or [])
            data = self.const_action_data(sym, call, tsym)
            entry = {"source_info": source_info(e.loc), "match_key": match_key,
                     "action_entry": {"action_id": action["id"], "action_data": data}}
            entries.append(entry)
            prios.append(self.entry_priority(e, tsym))
        self.check_priority_delta(tsym, prios)
        if any(kind == "keyword" for kind, _ in prios) or \
                "largest_priority_wins" in self.table_properties(tsym.decl):
            self.assign_priorities(entries, [p for _, p in prios], self.largest_wins(tsym))
        else:
            for i, (entry, (_, prio)) in enumerate(zip(entries, prios)):
                # p4c: @priority(N) goes to BMv2 as it is (smallest wins), others by position
                entry["priority"] = prio if prio is not None else i + 1
        return entries

    def check_priority_delta(self, tsym, prios):
        """`priority_delta` (P4-16 1.2.4) spaces the priorities the compiler gives entries
        without one; their order, which alone decides matching, stays the source order. With
        explicit priorities mixed in, the spaced values would matter: refused."""
        prop = self.table_properties(tsym.decl).get("priority_delta")
        if prop is None:
            return
        delta = self.const_value(prop.value, tsym.scope)
        if delta is None or isinstance(delta, bool) or delta <= 0:
            raise CompileError(prop.value.loc, "priority_delta must be a positive integer")
        if any(p is not None for _, p in prios):
            raise unsupported(prop.loc, "priority_delta together with entries that give "
                                        "their own priority")

    def entry_priority(self, e, tsym):
        """('keyword', N) for P4's `priority=N:`, ('annotation', N) for @priority(N)."""
        if e.priority is not None:
            return "keyword", self.const_int(e.priority, tsym.scope, "entry priority")
        anno = A.find_annotation(e.annos, "priority")
        if anno and anno.args and isinstance(anno.args[0], A.IntLit):
            return "annotation", anno.args[0].value
        return None, None

    def largest_wins(self, tsym):
        prop = self.table_properties(tsym.decl).get("largest_priority_wins")
        if prop is None:
            return True
        wins = self.const_value(prop.value, tsym.scope)
        if not isinstance(wins, bool):
            raise CompileError(prop.value.loc, "largest_priority_wins must be true or false")
        return wins

    def assign_priorities(self, entries, prios, largest_wins=True):
        """P4: explicit priorities (largest wins unless `largest_priority_wins = false`),
        unset ones follow source order (first wins); BMv2: priority 1 wins."""
        n = len(entries)
        sign = -1 if largest_wins else 1
        effective = [sign * p if p is not None else -(n - i) for i, p in enumerate(prios)]
        order = sorted(range(n), key=lambda i: (effective[i], i))
        for rank, i in enumerate(order):
            entries[i]["priority"] = rank + 1

    def entry_key(self, key, kv, ctx):
        kind = key["match_type"]
        width = self.key_width(key)
        full = mask_of(width)
        if isinstance(kv, A.DefaultExpr):
            return self.wildcard_key(kind, width, kv)
        if isinstance(kv, A.Mask):
            value, mask = self.key_const(kv.value, ctx, width), self.key_const(kv.mask, ctx, width)
            if kind == "lpm":
                plen = bin(mask).count("1")
                if mask != (full >> (width - plen) << (width - plen) if plen else 0):
                    raise CompileError(kv.loc, "lpm mask must be a prefix")
                return {"match_type": "lpm", "key": hexstr(value & mask, width)["value"],
                        "prefix_length": plen}
            if kind != "ternary":
                raise CompileError(kv.loc, f"a mask (&&&) is not allowed for a {kind} key")
            return {"match_type": "ternary", "key": hexstr(value & mask, width)["value"],
                    "mask": hexstr(mask, width)["value"]}
        if isinstance(kv, A.Range):
            if kind != "range":
                raise CompileError(kv.loc, f"a range (..) is not allowed for a {kind} key")
            lo, hi = self.key_const(kv.lo, ctx, width), self.key_const(kv.hi, ctx, width)
            return {"match_type": "range", "start": hexstr(lo, width)["value"],
                    "end": hexstr(hi, width)["value"]}
        value = self.key_const(kv, ctx, width)
        h = hexstr(value, width)["value"]
        if kind == "lpm":
            return {"match_type": "lpm", "key": h, "prefix_length": width}
        if kind == "ternary":
            return {"match_type": "ternary", "key": h, "mask": hexstr(full, width)["value"]}
        if kind == "range":
            return {"match_type": "range", "start": h, "end": h}
        return {"match_type": "exact", "key": h}

    def wildcard_key(self, kind, width, kv):
        zero = hexstr(0, width)["value"]
        if kind == "ternary":
            return {"match_type": "ternary", "key": zero, "mask": zero}
        if kind == "lpm":
            return {"match_type": "lpm", "key": zero, "prefix_length": 0}
        if kind == "range":
            return {"match_type": "range", "start": zero,
                    "end": hexstr(mask_of(width), width)["value"]}
        raise CompileError(kv.loc, "a wildcard (_ or default) is not allowed for an exact key")

    def key_width(self, key):
        if key["mask"] is not None:
            return (len(key["mask"]) - 2) * 4
        header, fname = key["target"]
        if fname == "$valid$":
            return 1
        return self.field_width(header, fname)

    def field_width(self, header, fname):
        if header == "scalars":
            for n, w, _ in self.scalar_fields:
                if n == fname:
                    return w
        for h in self.headers:
            if h["name"] == header:
                for n, w, _ in self.header_types[h["header_type"]]["fields"]:
                    if n == fname:
                        return w
        raise KeyError((header, fname))

    def key_const(self, e, ctx, width):
        v = self.eval_value(e, ctx)
        if v.const is None:
            raise CompileError(e.loc, "table entry keys must be compile-time constants")
        value = int(v.const)
        if value < 0 or value > mask_of(width):
            raise CompileError(e.loc, f"value {value} does not fit the {width}-bit key")
        return value

    # ------------------------------------------------------------ actions
    def p4info_order(self, sym):
        """Where p4c lists the action in the P4Info: by control (in pipeline order), first
        the global actions the control uses (p4c localizes them), then its own actions in
        declaration order."""
        if sym.control is None:
            return (len(self.json["pipelines"]), 0, len(self.action_meta))
        return (len(self.json["pipelines"]), 1, sym.decl.loc.line, sym.decl.loc.col)

    def bind_directional(self, d, binding, scope, prims, sym):
        """Parameters bound in an actions list (`binding`: the arguments, the table's scope,
        the A.ActionRef): evaluated where the table is declared and always copied (in for
        in/inout, out for out/inout), but standard_metadata."""
        args, table_scope, ref = binding
        outer = Ctx(table_scope, prims, "action", sym.control)
        directional = [p for p in d.params if p.direction]
        call = A.Call(d.loc, A.Name(d.loc, d.name), [], args)
        bound = self.bind_args(call, directional, d.name, outer)
        # standard_metadata is one BMv2 instance that externs (mark_to_drop) name: it is
        # bound itself unless the body could also reach it under another name (copies.py)
        needed = ref.copies
        copies = {p.name for p in directional if needed is None or p.name in needed
                  or not _is_standard_metadata(bound[p.name])}
        return self.bind_callee_params(directional, bound, copies, scope,
                                lambda tmp, arg, loc: self.assign(outer, tmp, arg, loc))

    def bind_table_action(self, sym, ref, tsym):
        """`actions = { a(x); }` binds a's directional parameters (P4-16 14.2.1.2): the
        action copies them in and out around its body (as p4c's RemoveActionParameters)."""
        d = sym.decl
        directional = [p for p in d.params if p.direction]
        if len(ref.args) != len(directional):
            raise CompileError(ref.loc, f"'{d.name}' in an actions list takes its "
                                        f"{len(directional)} directional arguments")
        key = (id(d), sym.control.name if sym.control else None)
        # the table's default action, entries and switch labels (lowered next) use it
        self.action_bindings[key] = (ref.args, tsym.scope, ref)

    def action_json(self, sym):
        """The BMv2 action for `sym` (one per binding of its directional parameters in an
        actions list, all with the action's name, as p4c emits them)."""
        key = (id(sym.decl), sym.control.name if sym.control else None)
        binding = self.action_bindings.get(key)
        key += (id(binding[0]) if binding else None,)
        if key in self.action_cache:
            return self.action_cache[key]
        d = sym.decl
        name = self.qualified(d.annos, d.name, sym.control)
        scope = Scope(sym.scope)
        runtime_data, p4_params = [], []
        data_params = [p for p in d.params if not p.direction]
        if binding is None and len(data_params) != len(d.params):
            p = next(p for p in d.params if p.direction)
            raise unsupported(p.loc, f"directional parameter '{p.name}' of action "
                                     f"'{d.name}' used from a table without binding it")
        for i, p in enumerate(data_params):
            t = self.resolve_type(p.type, sym.scope)
            if not t.is_scalar or isinstance(t, IntT):
                raise CompileError(p.type.loc, f"action parameter '{p.name}' must have a "
                                               f"fixed-width type, not {t}")
            runtime_data.append({"name": p.name, "bitwidth": storage_width(t)})
            p4_params.append({"name": p.name, "bitwidth": storage_width(t), "type": t})
            scope.declare(p.name, Val(t, json={"type": "runtime_data", "value": i}), p.loc)
        prims = []
        ctx = Ctx(scope, prims, "action", sym.control)
        copy_out = self.bind_directional(d, binding, scope, prims, sym) if binding else []
        self.inline_body(d.body, ctx, scope, None)
        self.copy_out(ctx, copy_out)
        action = self.add_action_json(name, runtime_data, prims, d.loc)
        self.action_meta[name] = {"decl": d, "annos": d.annos, "params": p4_params,
                                  "order": self.p4info_order(sym)}
        self.action_cache[key] = action
        return action


V1SWITCH_ROLES = ["p", "vr", "ig", "eg", "ck", "dep"]


def _is_standard_metadata(v):
    return isinstance(v.ref, HeaderRef) and v.ref.name == "standard_metadata"

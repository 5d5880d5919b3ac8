"""The front-end's middle: declarations, types, storage layout and BMv2 JSON assembly.

`Compiler` gathers the global declarations, resolves types, lays out the
program's headers and metadata as BMv2 header instances, then lowers the
V1Switch blocks (mixins in exprs/stmts/controls/parsers) into BMv2 JSON.
"""
from . import ast as A
from .check import BlockChecker, check_v1model, convert
from .controls import ControlMixin
from .desugar import (dontcare_args, instantiate_direct_calls, parser_initializers_in_start,
                      split_conditions, switches_as_ifs)
from .errors import CompileError, unsupported
from .exprs import Ctx
from .exprs import ExprMixin
from .hsindex import IndexExpander
from .bind import bind_program
from .inline import inline_program
from .order import order_side_effects
from .parsers import ParserMixin
from .stmts import StmtMixin
from .symbols import (ActionSym, BlockSym, ExternFuncSym, FuncSym, Scope,
                      SubControlSym, TypeSym)
from .types import (Bits, BoolT, DontCareT, EnumT, ErrorT, ExternT, IntT, MatchKindT, StackT,
                    StringT, StructT, TupleT, TypeVar, VarbitT, VoidT, BlockT, same_type,
                    storage_width)
from .unroll import Unroller, replace_loops, separate_iterations
from .values import FieldRef, HeaderRef, StackRef, StructRef, UnionRef, Val, field_val

JSON_VERSION = [2, 23]


WIDEST_FIELD = 128    # bits p4core holds in one field


class Compiler(ExprMixin, StmtMixin, ControlMixin, ParserMixin):
    def __init__(self, program, source_name):
        self.program = program
        self.source_name = source_name
        self.globals = Scope()
        self.errors = {}                 # error name -> value
        self.match_kinds = set()
        self.enums = []                  # EnumT, in declaration order
        self.header_types = {}           # type name -> JSON
        self.headers = []
        self.header_stacks = []
        self.header_union_types = {}
        self.header_unions = []
        self.header_union_stacks = []
        self.scalar_fields = []
        self.scalar_names = set()
        self.json = {k: [] for k in (
            "parsers", "parse_vsets", "deparsers", "meter_arrays", "counter_arrays",
            "register_arrays", "calculations", "learn_lists", "actions", "pipelines",
            "checksums", "field_lists", "extern_instances")}
        self.instances = []              # ExternInstance, all of them
        self.tables_info = []            # (TableSym, JSON) for P4Info
        self.digests = []                # (name, StructT or list of (name, width), learn list id)
        self.value_sets = []
        self.controller_headers = []
        self.name_counters = {}
        self.action_cache = {}
        self.action_meta = {}            # JSON action name -> {decl, annos, params}
        self.new_types = {}              # `type bit<W> Name` declarations, for the P4Info
        self.typedefs = {}               # `typedef T Name`: Name -> T
        self.action_bindings = {}        # (action decl, control) -> args bound in a table
        self.action_profiles = []        # JSON action_profiles of the pipeline being lowered
        self.anonymous_profiles = 0      # `implementation = action_profile(N)` instances so far
        self.split_count = 0             # desugar.split_conditions' temporaries named so far
        self.unroller = Unroller(self)
        self.hsindex = IndexExpander(self)
        self.ir_nodes = {}               # id(AST expression) -> (it, scope, IR node): typed()
        self.program_nodes = {}          # id(AST expression) -> (it, IR node): check_v1model's
        self.unrolled_loops = {}         # id(loop) -> (it, its iterations): check_v1model's
        self.warnings = []               # CompileWarning, as the checker phase found them

    # ------------------------------------------------------------ entry point
    def compile(self):
        for d in self.program.decls:
            self.declare_global(d)
        self.check_blocks()
        dontcare_args(self.program, self.program_nodes)
        instantiate_direct_calls(self.program, self.globals)
        switches_as_ifs(self.program)
        parser_initializers_in_start(self.program)
        self.keep_nodes(order_side_effects(self.program, self.program_nodes))
        self.keep_nodes(split_conditions(self.program))
        self.keep_nodes(separate_iterations(self.unrolled_loops))
        self.keep_nodes(inline_program(self.program, self.globals))
        bind_program(self, self.program)
        main = self.globals.lookup("main")
        if main is None:
            raise CompileError(None, "program has no 'main' package instance")
        self.lower_main(main)
        return self.assemble_json()

    def check_blocks(self):
        """The checker phase (check.py) over the declared program, before lowering; its
        expression nodes are kept for the emitter (`ExprMixin.node`), and the loops its
        scopes decide are unrolled in the program (`unroll.replace_loops`)."""
        self.program_nodes, unrolled = check_v1model(self, self.program)
        self.unrolled_loops = unrolled
        if unrolled:
            replace_loops([d for d in self.program.decls if isinstance(
                d, (A.ActionDecl, A.FunctionDecl, A.ControlDecl, A.ParserDecl))], unrolled)

    def keep_nodes(self, rebuilt):
        """An expression a pass rebuilt (written, the one it stands for, of the same type
        and, as it, without a compile-time value) has the program's node of the original,
        so the emitter reads it from the IR (`ExprMixin.node`) instead of checking it."""
        for written, original in rebuilt:
            hit = self.program_nodes.get(id(original))
            if hit is not None and hit[0] is original:
                self.program_nodes[id(written)] = (written, hit[1])

    # ------------------------------------------------------------ declarations
    def declare_global(self, d):
        scope = self.globals
        if isinstance(d, A.ConstDecl):
            t = self.resolve_type(d.type)
            scope.declare(d.name, self.eval_const_decl(d, t, scope), d.loc)
        elif isinstance(d, A.Typedef):
            t = self.typedef_type(d)
            if not self.repeats_typedef(d, t):
                scope.declare(d.name, TypeSym(t), d.loc)
                self.typedefs[d.name] = t
        elif isinstance(d, A.StructLike):
            scope.declare(d.name, TypeSym(self.struct_type(d)), d.loc)
        elif isinstance(d, A.EnumDecl):
            scope.declare(d.name, TypeSym(self.enum_type(d)), d.loc)
        elif isinstance(d, A.ErrorDecl):
            self.add_errors(d)
        elif isinstance(d, A.MatchKindDecl):
            self.add_match_kinds(d)
        elif isinstance(d, A.ExternDecl):
            scope.declare(d.name, TypeSym(ExternT(d.name, d, [TypeVar(p) for p in d.type_params])),
                          d.loc)
        elif isinstance(d, A.ExternFunc):
            self.declare_extern_func(d)
        elif isinstance(d, (A.ParserDecl, A.ControlDecl, A.PackageDecl)):
            self.declare_block(d)
        elif isinstance(d, A.ActionDecl):
            scope.declare(d.name, ActionSym(d, None, scope), d.loc)
        elif isinstance(d, A.FunctionDecl):
            scope.declare(d.name, FuncSym(d, scope), d.loc)
        elif isinstance(d, A.Instance):
            self.declare_instance(d, scope, None)
        else:
            raise unsupported(d.loc, type(d).__name__)

    def repeats_typedef(self, d, t):
        """An identical re-declaration of a typedef (programs repeat v1model's PortId_t)."""
        old = self.typedefs.get(d.name)
        return (not d.is_new_type and old is not None and same_type(old, t)
                and self.globals.names.get(d.name) is not None)

    def declare_block(self, d):
        existing = self.globals.lookup(d.name)
        is_def = not (isinstance(d, A.PackageDecl) or
                      (isinstance(d, A.ParserDecl) and d.ctor_params is None and not d.states
                       and not d.locals) or
                      (isinstance(d, A.ControlDecl) and d.body is None))
        if isinstance(existing, BlockSym):
            raise CompileError(d.loc, f"duplicate declaration of '{d.name}'")
        if is_def and d.ctor_params and not isinstance(d, (A.ControlDecl, A.ParserDecl)):
            raise unsupported(d.loc, f"constructor parameters of '{d.name}'")
        self.globals.declare(d.name, BlockSym(d), d.loc)

    def declare_extern_func(self, d):
        existing = self.globals.names.get(d.name)
        if existing is None:
            self.globals.declare(d.name, ExternFuncSym(d.name, [d.method]), d.loc)
        elif isinstance(existing, ExternFuncSym):
            existing.overloads.append(d.method)
        else:
            raise CompileError(d.loc, f"duplicate declaration of '{d.name}'")

    def add_errors(self, d):
        for loc, name in d.members:
            if name in self.errors:
                raise CompileError(loc, f"duplicate error constant '{name}'")
            self.errors[name] = len(self.errors)

    def add_match_kinds(self, d):
        for loc, name in d.members:
            if name in self.match_kinds:
                raise CompileError(loc, f"duplicate match_kind '{name}'")
            self.match_kinds.add(name)

    # ------------------------------------------------------------ types
    def resolve_type(self, tr, scope=None, type_env=None):
        scope = scope or self.globals
        if tr.name == "stack":
            elem = self.resolve_type(tr.inner, scope, type_env)
            if not (isinstance(elem, StructT) and elem.kind in ("header", "header_union")):
                raise CompileError(tr.loc, f"header stack element must be a header, not {elem}")
            size = self.const_int(tr.stack_size, scope, "header stack size")
            return StackT(elem, size)
        simple = {"bool": BoolT(), "error": ErrorT(), "string": StringT(), "void": VoidT(),
                  "match_kind": MatchKindT(), "_": DontCareT()}
        if tr.name in simple:
            return simple[tr.name]
        if tr.name in ("bit", "int"):
            width = self.const_int(tr.width, scope, "width") if tr.width is not None else None
            if width is None:
                return IntT()
            if width <= 0 or (tr.name == "int" and width < 2):
                raise CompileError(tr.loc, f"invalid width {width} for {tr.name}")
            return Bits(width, tr.name == "int")
        if tr.name == "varbit":
            return VarbitT(self.const_int(tr.width, scope, "width"))
        if tr.name == "tuple":
            return TupleT([self.resolve_type(a, scope, type_env) for a in tr.args])
        if type_env and tr.name in type_env:
            return type_env[tr.name]
        sym = scope.lookup(tr.name)
        if isinstance(sym, TypeSym):
            return self.instantiate_type(sym.type, tr, scope, type_env)
        if isinstance(sym, BlockSym):
            return BlockT(type(sym.decl).__name__, sym.decl)
        raise CompileError(tr.loc, f"undeclared type '{tr.name}'")

    def typedef_type(self, d):
        t = self.resolve_type(d.type)
        if d.is_new_type:
            if not isinstance(t, Bits):
                raise unsupported(d.loc, f"'type' declaration of {t} (only bit<W>/int<W>)")
            t = Bits(t.width, t.signed, d.name)
            self.new_types[d.name] = t
        return t

    def bind_ctor_args(self, d, decl, scope):
        """A sub-block's constructor arguments: constants, or for a parameter of a control
        type the control instance passed (`C2(c1) c2;`, applied through it)."""
        params = decl.ctor_params or []
        blocks = {p.name: a for p, a in zip(params, d.args)
                  if isinstance(self.resolve_type(p.type, scope), BlockT)}
        if not blocks:
            call = A.Call(d.loc, A.Name(d.loc, decl.name), [], d.args)
            return self.bind_args(call, params, decl.name, Ctx(scope))
        if len(d.args) != len(params) or any(isinstance(a, A.NamedArg) for a in d.args):
            raise unsupported(d.loc, f"named or default constructor arguments of "
                                     f"'{decl.name}' with a control parameter")
        ctor = {}
        for p, a in zip(params, d.args):
            if p.name not in blocks:
                call = A.Call(d.loc, A.Name(d.loc, decl.name), [], [a])
                ctor.update(self.bind_args(call, [p], decl.name, Ctx(scope)))
                continue
            sym = scope.lookup(a.name) if isinstance(a, A.Name) else None
            if not isinstance(sym, SubControlSym):
                raise unsupported(a.loc, f"constructor argument '{p.name}' of '{decl.name}' "
                                         f"that is not a control instance")
            ctor[p.name] = sym
        return ctor

    def instantiate_type(self, t, tr, scope, type_env):
        if isinstance(t, ExternT) and tr.args:
            args = [self.resolve_type(a, scope, type_env) for a in tr.args]
            if len(args) > len(t.decl.type_params):
                raise CompileError(tr.loc, f"too many type arguments for '{t.name}'")
            args += [TypeVar(p) for p in t.decl.type_params[len(args):]]
            return ExternT(t.name, t.decl, args)
        if tr.args:
            raise CompileError(tr.loc, f"type '{tr.name}' takes no type arguments")
        return t

    def struct_type(self, d):
        st = StructT(d.kind, d.name, [], d.annos)
        st.loc = d.loc
        seen = set()
        for f in d.fields:
            if f.name in seen:
                raise CompileError(f.loc, f"duplicate field '{f.name}' in {d.kind} {d.name}")
            seen.add(f.name)
            ft = self.resolve_type(f.type)
            if d.kind == "header" and isinstance(ft, StructT) and ft.kind == "struct":
                st.nested[f.name] = self.flatten_struct_field(d, st, [f.name], ft, f)
                continue
            self.check_field_type(d, f, ft)
            if d.kind == "header" and isinstance(ft, Bits) and ft.width > WIDEST_FIELD:
                self.split_wide_field(d, st, f, ft)
                continue
            st.fields.append((f.name, ft))
            st.field_annos[f.name] = f.annos
            st.field_locs[f.name] = f.type.loc
        return st

    def split_wide_field(self, d, st, f, ft):
        """A header field wider than the target's 128-bit fields is laid out as consecutive
        pieces of at most 128 bits (`data_0`, `data_1`, ...): the wire format, whole-header
        extract, emit, copies, equality and checksums are unchanged; reading or writing the
        field itself is refused (header_member)."""
        if ft.signed:
            raise unsupported(f.type.loc, f"int<{ft.width}> header field '{f.name}' (at most "
                                          f"{WIDEST_FIELD} bits)")
        declared = {g.name for g in d.fields}
        left, i = ft.width, 0
        while left > 0:
            name = f"{f.name}_{i}"
            while name in declared:
                name = "_" + name
            piece = min(left, WIDEST_FIELD)
            st.fields.append((name, Bits(piece)))
            st.field_annos[name] = []
            st.field_locs[name] = f.type.loc
            left, i = left - piece, i + 1
        st.wide[f.name] = ft.width

    def flatten_struct_field(self, d, st, path, ft, f):
        """A struct inside a header (P4-16 7.2.2) is laid out as its fields, named as p4c's
        FlattenHeaders names them (`row.e` -> `_row_e0`, the number being the position in
        the header); returns (struct type, {member: flat name or a nested pair})."""
        members = {}
        for name, t in ft.fields:
            if isinstance(t, StructT) and t.kind == "struct":
                members[name] = self.flatten_struct_field(d, st, path + [name], t, f)
                continue
            member = A.StructField(f.loc, f.annos, f.type, ".".join(path + [name]))
            self.check_field_type(d, member, t)
            flat = "_" + "_".join(path + [name]) + str(len(st.fields))
            st.fields.append((flat, t))
            st.field_annos[flat] = []
            st.field_locs[flat] = f.type.loc
            members[name] = flat
        return ft, members

    def check_field_type(self, d, f, ft):
        if d.kind == "header" and not isinstance(ft, (Bits, VarbitT, EnumT)) and not (
                isinstance(ft, BoolT)):
            raise CompileError(f.type.loc, f"header field '{f.name}' must be bit<>, int<> or "
                                           f"varbit<>, not {ft}")
        if d.kind == "header" and isinstance(ft, EnumT) and ft.base is None:
            raise CompileError(f.type.loc, f"header field '{f.name}' cannot be a "
                                           f"non-serializable enum")
        if d.kind == "header_union" and not (isinstance(ft, StructT) and ft.kind == "header"):
            raise CompileError(f.type.loc, f"header_union member '{f.name}' must be a header")

    def enum_type(self, d):
        base = self.resolve_type(d.base) if d.base else None
        if base is not None and not isinstance(base, Bits):
            raise CompileError(d.base.loc, "serializable enum base must be bit<> or int<>")
        members = {}
        for i, (loc, name, value) in enumerate(d.members):
            if name in members:
                raise CompileError(loc, f"duplicate enum member '{name}'")
            if base is not None:
                if value is None:
                    raise CompileError(loc, f"serializable enum member '{name}' needs a value")
                members[name] = self.const_int(value, self.globals, "enum value")
            else:
                members[name] = i
        et = EnumT(d.name, members, base)
        self.enums.append(et)
        return et

    # ------------------------------------------------------------ compile-time evaluation
    # The checker's (check.py): an expression is resolved and typed in `scope` (the global
    # one when None) into the typed IR, whose nodes carry their folded values.
    def checked(self, e, scope):
        return BlockChecker(self, None, {}, outer=scope).expr(e)

    def type_of(self, e, scope):
        """The type of `e` in `scope` (what the passes, hsindex.py and unroll.py, ask)."""
        return self.checked(e, scope).type

    def const_value(self, e, scope, t=None, what="constant"):
        """`e`'s compile-time value in `scope` (converted to `t` when given), or None when
        it is known only at run time."""
        node = self.checked(e, scope)
        return node.value if t is None or node.value is None else \
            convert(node.value, node.type, t, e.loc, what)

    def const_int(self, e, scope, what):
        return BlockChecker(self, None, {}, outer=scope).const_int(e, what)

    def eval_const_decl(self, d, t, scope):
        node = self.checked(d.value, scope)
        value = convert(node.value, node.type, t, d.value.loc, f"constant '{d.name}'")
        if value is None and not isinstance(node.type, (EnumT, ErrorT)):
            raise CompileError(d.value.loc, f"initializer of constant '{d.name}' is not a "
                                            f"compile-time constant")
        return Val(t, const=value, extra={"is_const": True, "name": d.name})

    # ------------------------------------------------------------ instances
    def declare_instance(self, d, scope, control):
        if d.initializer is not None:   # v1model has no abstract methods to implement
            raise unsupported(d.loc, "instance initializer `= { ... }` (an architecture "
                                     "with abstract extern methods, e.g. --arch tna)")
        t = self.resolve_type(d.type, scope)
        is_sub_block = (isinstance(t, BlockT) and control is not None and (
            isinstance(t.decl, A.ControlDecl) and isinstance(control.decl, A.ControlDecl) or
            isinstance(t.decl, A.ParserDecl) and isinstance(control.decl, A.ParserDecl)))
        if is_sub_block:
            if (t.decl.body is None if isinstance(t.decl, A.ControlDecl) else not t.decl.states):
                raise unsupported(d.loc, f"instance of the type '{t.decl.name}' (no body)")
            ctor = self.bind_ctor_args(d, t.decl, scope)
            for p in t.decl.ctor_params or []:
                if not isinstance(ctor[p.name], SubControlSym) and ctor[p.name].const is None:
                    raise unsupported(d.loc, f"constructor argument '{p.name}' of "
                                             f"'{t.decl.name}' that is not a compile-time "
                                             f"constant")
            scope.declare(d.name, SubControlSym(d.name, t.decl, d.loc, ctor, owner_name=control.name),
                          d.loc)
            return
        if isinstance(t, BlockT):
            if not isinstance(t.decl, A.PackageDecl) or control is not None:
                raise unsupported(d.loc, f"instance of {t.kind[:-4].lower()} '{t.decl.name}' "
                                         f"here (sub-parsers, top-level block instances)")
            self.check_package_args(d, t, scope)
            scope.declare(d.name, Val(t, extra={"instance": d}), d.loc)
            return
        if not isinstance(t, ExternT):
            raise CompileError(d.type.loc, f"cannot instantiate {t}")
        if control is None:         # a top-level instance is checked as it is declared
            BlockChecker(self, None, {}).instance(d)
        inst = self.make_extern_instance(d, t, scope, control)
        scope.declare(d.name, inst, d.loc)

    def check_package_args(self, d, t, scope):
        if not isinstance(t.decl, A.PackageDecl):
            raise CompileError(d.loc, f"'{t.decl.name}' is not a package")
        want = len(t.decl.params)
        if len(d.args) != want:
            raise CompileError(d.type.loc, f"wrong number of arguments to package '{t.decl.name}': "
                                      f"expected {want}, got {len(d.args)}")

    def qualified(self, annos, local_name, control):
        """The p4c-style fully qualified name, honouring @name."""
        anno = A.find_annotation(annos, "name")
        name = local_name
        if anno and anno.args and isinstance(anno.args[0], A.StrLit):
            name = anno.args[0].value
            if name.startswith("."):
                return name[1:]
        if control is None:
            return name
        return f"{control.name}.{name}"

    # ------------------------------------------------------------ storage layout
    def add_header_type(self, st, json_name=None):
        name = json_name or st.name
        if name in self.header_types:
            return name
        fields, varbits = [], [(f, t) for f, t in st.fields if isinstance(t, VarbitT)]
        if len(varbits) > 1 or varbits and st.kind != "header":
            raise unsupported(st.field_locs.get(varbits[-1][0]),
                              f"varbit field '{varbits[-1][0]}' in {st.kind} '{st.name}' (one "
                              f"per header only)")
        for fname, ft in st.fields:
            if isinstance(ft, VarbitT):
                fields.append([fname, "*", False])
                continue
            fields.append([fname, storage_width(ft), isinstance(ft, Bits) and ft.signed])
        fixed = sum(f[1] for f in fields if f[1] != "*")
        if st.kind == "struct" and fixed % 8:
            fields.append(["_padding", 8 - fixed % 8, False])
        htype = {"name": name, "id": len(self.header_types), "fields": fields}
        if varbits:
            htype["length_exp"] = None
            htype["max_length"] = (fixed + varbits[0][1].max_width + 7) // 8
        self.header_types[name] = htype
        return name

    def add_header_instance(self, name, st, metadata=False, json_type=None):
        if not metadata and st.kind == "header":
            check_whole_bytes(st)
        htype = self.add_header_type(st, json_type)
        self.headers.append({"name": name, "id": len(self.headers), "header_type": htype,
                             "metadata": metadata, "pi_omit": True})
        return HeaderRef(name, st, metadata)

    def add_stack(self, name, t):
        if t.elem.kind == "header_union":
            return self.add_union_stack(name, t)
        elems = []
        for i in range(t.size):
            elems.append(self.add_header_instance(f"{name}[{i}]", t.elem))
        ids = [h["id"] for h in self.headers[-t.size:]]
        self.header_stacks.append({"name": name, "id": len(self.header_stacks),
                                   "header_type": t.elem.name, "size": t.size,
                                   "header_ids": ids})
        return StackRef(name, t, elems)

    def add_union_stack(self, name, t):
        unions = [self.add_union(f"{name}[{i}]", t.elem) for i in range(t.size)]
        self.header_union_stacks.append({
            "name": name, "id": len(self.header_union_stacks), "union_type": t.elem.name,
            "size": t.size, "header_union_ids": [self.header_unions[-t.size + i]["id"]
                                                 for i in range(t.size)]})
        return StackRef(name, t, unions, union=True)

    def add_union(self, name, t):
        if t.name not in self.header_union_types:
            self.header_union_types[t.name] = {
                "name": t.name, "id": len(self.header_union_types),
                "headers": [[m, mt.name] for m, mt in t.fields]}
        members = {}
        for m, mt in t.fields:
            members[m] = self.add_header_instance(f"{name}.{m}", mt)
        self.header_unions.append({"name": name, "id": len(self.header_unions),
                                   "union_type": t.name,
                                   "header_ids": [h.name and self._header_id(h.name)
                                                  for h in members.values()]})
        return UnionRef(name, t, members)

    def _header_id(self, name):
        for h in self.headers:
            if h["name"] == name:
                return h["id"]
        raise KeyError(name)

    def new_scalar(self, hint, t):
        name = hint
        n = 0
        while name in self.scalar_names:
            name = f"{hint}_{n}"
            n += 1
        self.scalar_names.add(name)
        self.scalar_fields.append([name, storage_width(t), isinstance(t, Bits) and t.signed])
        return field_val(t, FieldRef("scalars", name))

    def layout(self, t, path, metadata, scalar_prefix):
        """Storage for a value of type `t` (parameter or local variable)."""
        if isinstance(t, StructT) and t.kind == "header":
            return Val(t, ref=self.add_header_instance(path, t, metadata))
        if isinstance(t, StackT):
            return Val(t, ref=self.add_stack(path, t))
        if isinstance(t, StructT) and t.kind == "header_union":
            return Val(t, ref=self.add_union(path, t))
        if isinstance(t, (StructT, TupleT)):
            members = {}
            for fname, ft in t.fields:
                sub = f"{path}.{fname}" if path else fname
                members[fname] = self.layout(ft, sub, metadata, f"{scalar_prefix}.{fname}")
            return Val(t, ref=StructRef(t, members))
        if t.is_scalar:
            return self.new_scalar(scalar_prefix, t)
        raise CompileError(None, f"cannot store a value of type {t}")

    def unique_name(self, base):
        n = self.name_counters.get(base)
        self.name_counters[base] = 0 if n is None else n + 1
        return base if n is None else f"{base}_{n}"

    def unique_instance_name(self, base):
        """unique_name that also avoids the header/stack/union instances of parameters
        (a local `H h` beside a parameter field `hdr.h` must not reuse instance `h`)."""
        taken = {x["name"].split(".")[0].split("[")[0]
                 for x in self.headers + self.header_stacks + self.header_unions}
        name = self.unique_name(base)
        while name in taken:
            name = self.unique_name(base)
        return name

    # ------------------------------------------------------------ JSON assembly
    def assemble_json(self):
        scalars = {"name": "scalars_0", "id": len(self.header_types), "fields": self.scalar_fields}
        pad = sum(f[1] for f in self.scalar_fields) % 8
        if pad:
            scalars["fields"] = self.scalar_fields + [["_padding_0", 8 - pad, False]]
        header_types = [scalars] + list(self.header_types.values())
        for i, h in enumerate(header_types):
            h["id"] = i
        headers = [{"name": "scalars", "id": 0, "header_type": "scalars_0", "metadata": True,
                    "pi_omit": True}] + self.headers
        for i, h in enumerate(headers):
            h["id"] = i
        self._renumber_stack_ids(headers)
        j = self.json
        return {
            "header_types": header_types,
            "headers": headers,
            "header_stacks": self.header_stacks,
            "header_union_types": list(self.header_union_types.values()),
            "header_unions": self.header_unions,
            "header_union_stacks": self.header_union_stacks,
            "field_lists": j["field_lists"],
            "errors": [[n, v] for n, v in self.errors.items()],
            "enums": [{"name": e.name, "entries": sorted(([k, v] for k, v in e.members.items()),
                                                key=lambda x: x[1])}
                      for e in self.enums if e.base is None],
            "parsers": j["parsers"],
            "parse_vsets": j["parse_vsets"],
            "deparsers": j["deparsers"],
            "meter_arrays": j["meter_arrays"],
            "counter_arrays": j["counter_arrays"],
            "register_arrays": j["register_arrays"],
            "calculations": j["calculations"],
            "learn_lists": j["learn_lists"],
            "actions": j["actions"],
            "pipelines": j["pipelines"],
            "checksums": j["checksums"],
            "force_arith": [],
            "extern_instances": j["extern_instances"],
            "field_aliases": self.field_aliases(),
            "program": self.source_name,
            "__meta__": {"version": JSON_VERSION, "compiler": "aqmlab softswitch-p4c"},
        }

    def _renumber_stack_ids(self, headers):
        by_name = {h["name"]: h["id"] for h in headers}
        for s in self.header_stacks:
            s["header_ids"] = [by_name[f"{s['name']}[{i}]"] for i in range(s["size"])]
        for u in self.header_unions:
            ut = self.header_union_types[u["union_type"]]
            u["header_ids"] = [by_name[f"{u['name']}.{m}"] for m, _ in ut["headers"]]

    def field_aliases(self):
        aliases = []
        sm = self.globals.lookup("standard_metadata_t")
        if not isinstance(sm, TypeSym):
            return aliases
        for fname, annos in sm.type.field_annos.items():
            a = A.find_annotation(annos, "alias")
            if a and a.args and isinstance(a.args[0], A.StrLit):
                aliases.append([a.args[0].value, ["standard_metadata", fname]])
        return aliases


def check_whole_bytes(st):
    """A header travels in the packet, so its fields (a varbit field at its largest) total
    whole bytes: p4c's BMv2 back end refuses any other header (it pads only structs), and
    BMv2 and the engine refuse its JSON."""
    bits = sum(t.max_width if isinstance(t, VarbitT) else storage_width(t) for _, t in st.fields)
    if bits % 8:
        raise unsupported(getattr(st, "loc", None),
                          f"header {st.name} with fields totaling {bits} bits (the BMv2 target "
                          f"only supports headers whose fields total a multiple of 8 bits)")

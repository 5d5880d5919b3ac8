"""Check-only front-end for TNA / T2NA programs (`softswitch-p4c --arch tna|t2na`).

A TNA program is parsed, its declarations resolved with the v1model front-end's
`Compiler` (types, constants, externs), the `Switch(Pipeline(...))` package
checked against the architecture's block signatures, and every parser,
control, action and RegisterAction body type-checked: names bound, fields and
extern methods exist, `bit<W>` widths agree in assignments and operators.
The Tofino limits are `tofino_lint.py`'s job; running the program on the
built-in target is `tna_lower.py`'s.
"""
from . import ast as A
from .compiler import Compiler
from .errors import CompileError
from .symbols import TypeSym
from .types import Bits, BoolT, EnumT, ErrorT, ExternT, IntT, StructT, StringT, TupleT, VoidT
from .values import Val

ARCH_DEFINES = {"tna": ["__TARGET_TOFINO__=1"], "t2na": ["__TARGET_TOFINO__=2"]}
CELL_BYTES = {"tna": 80, "t2na": 176}      # queue-depth unit of Tofino 1 / Tofino 2
PIPELINE_ROLES = ("ingress_parser", "ingress", "ingress_deparser",
                  "egress_parser", "egress", "egress_deparser")
ROLE_TYPES = ("IngressParserT", "IngressT", "IngressDeparserT",
              "EgressParserT", "EgressT", "EgressDeparserT")
HEADER_METHODS = {"isValid": BoolT(), "setValid": VoidT(), "setInvalid": VoidT()}
COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")
UNKNOWN = None      # a type this checker does not track (generic results); never an error


class TnaProgram:
    """The checked program: pipelines as {role: block decl}, for the lint."""

    def __init__(self, program, pipelines):
        self.program = program
        self.pipelines = pipelines


def check_program(program, source_name):
    """Type-check a parsed TNA/T2NA program; raises CompileError at the first problem."""
    comp = Compiler(program, source_name)
    instances = {}
    for d in program.decls:
        if isinstance(d, A.Instance):
            instances[d.name] = d
        else:
            comp.declare_global(d)
    pipelines = [_pipeline_blocks(comp, instances, arg) for arg in _switch_args(instances)]
    externs = _global_externs(comp, instances)
    for blocks in pipelines:
        for role, decl in blocks.items():
            BodyChecker(comp, decl, externs).check()
    return TnaProgram(program, pipelines)


def _global_externs(comp, instances):
    """Top-level extern instances (e.g. a Register shared by controls): name -> type;
    RegisterAction bodies are checked here, with only their own parameters in scope."""
    externs = {}
    for name, inst in instances.items():
        if inst.type.name in ("Switch", "Pipeline"):
            continue
        externs[name] = comp.resolve_type(inst.type)
        checker = BodyChecker(comp, None, externs)
        for a in inst.args:
            checker.expr(a)
        for m in inst.initializer or []:
            checker.function_body(m)
    return externs


def _switch_args(instances):
    main = instances.get("main")
    if main is None:
        raise CompileError(None, "program has no 'main' package instance")
    if main.type.name != "Switch":
        raise CompileError(main.loc, f"main must be a 'Switch' (TNA), not '{main.type.name}'")
    if not 1 <= len(main.args) <= 4:
        raise CompileError(main.loc, "Switch takes 1 to 4 pipelines")
    return main.args


def _pipeline_blocks(comp, instances, arg):
    if isinstance(arg, A.Name):
        inst = instances.get(arg.name)
        if inst is None or inst.type.name != "Pipeline":
            raise CompileError(arg.loc, f"'{arg.name}' is not a Pipeline instance")
        args, loc = inst.args, inst.loc
    elif isinstance(arg, A.Call) and isinstance(arg.func, A.Name) and arg.func.name == "Pipeline":
        args, loc = arg.args, arg.loc
    else:
        raise CompileError(arg.loc, "Switch arguments must be Pipeline instances")
    if len(args) != len(PIPELINE_ROLES):
        raise CompileError(loc, f"Pipeline takes {len(PIPELINE_ROLES)} blocks, got {len(args)}")
    blocks = {}
    for role, role_type, a in zip(PIPELINE_ROLES, ROLE_TYPES, args):
        decl = _block_decl(comp, a, role)
        _check_signature(comp, decl, comp.globals.lookup(role_type).decl, role)
        blocks[role] = decl
    return blocks


def _block_decl(comp, arg, role):
    if not (isinstance(arg, A.Call) and isinstance(arg.func, A.Name) and not arg.args):
        raise CompileError(arg.loc, f"Pipeline argument '{role}' must be `Block()`")
    sym = comp.globals.lookup(arg.func.name)
    decl = getattr(sym, "decl", None)
    if not isinstance(decl, (A.ParserDecl, A.ControlDecl)):
        raise CompileError(arg.loc, f"'{arg.func.name}' is not a parser or control")
    return decl


def _check_signature(comp, decl, arch_decl, role):
    """Parameter count, directions and (generic-free) types must match the arch's."""
    want_parser = isinstance(arch_decl, A.ParserDecl)
    if want_parser != isinstance(decl, A.ParserDecl):
        raise CompileError(decl.loc, f"Pipeline '{role}' must be a "
                                     f"{'parser' if want_parser else 'control'}")
    if len(decl.params) != len(arch_decl.params):
        raise CompileError(decl.loc, f"'{decl.name}' ({role}) has {len(decl.params)} parameters; "
                                     f"{arch_decl.name} has {len(arch_decl.params)}")
    generic = set(arch_decl.type_params)
    for p, ap in zip(decl.params, arch_decl.params):
        if p.direction != ap.direction:
            raise CompileError(p.loc, f"parameter '{p.name}' of {decl.name} must be "
                                      f"'{ap.direction or 'directionless'}' ({arch_decl.name})")
        if ap.type.name in generic:
            continue
        have, want = comp.resolve_type(p.type), comp.resolve_type(ap.type)
        if str(have) != str(want):
            raise CompileError(p.loc, f"parameter '{p.name}' of {decl.name} has type {have}; "
                                      f"{arch_decl.name} expects {want}")


class BodyChecker:
    """Types of expressions in one parser or control, with its locals in scope."""

    def __init__(self, comp, decl, externs):
        self.comp = comp
        self.decl = decl
        self.scopes = [dict(externs)]
        self.callables = {}          # action / table / state / function names of the block

    def check(self):
        for p in self.decl.params:
            self.bind(p.name, self.comp.resolve_type(p.type))
        for local in self.decl.locals:
            self.declare_local(local)
        if isinstance(self.decl, A.ParserDecl):
            for st in self.decl.states:
                self.callables[st.name] = st
            for st in self.decl.states:
                self.stmts(st.stmts)
                if st.transition is not None:
                    self.transition_stmt(st.transition)
        else:
            self.stmt(self.decl.body)

    # ---------------------------------------------------------- scopes
    def bind(self, name, t):
        self.scopes[-1][name] = t

    def lookup(self, name, loc):
        for s in reversed(self.scopes):
            if name in s:
                return s[name]
        if name in self.callables:
            return self.callables[name]
        sym = self.comp.globals.lookup(name)
        if sym is None:
            raise CompileError(loc, f"'{name}' is not declared")
        if isinstance(sym, Val):
            return sym.type
        if isinstance(sym, TypeSym):
            return sym
        return sym

    def declare_local(self, d):
        if isinstance(d, A.Instance):
            t = self.comp.resolve_type(d.type)
            for a in d.args:
                self.expr(a)
            self.bind(d.name, t)
            for m in d.initializer or []:
                self.function_body(m)
        elif isinstance(d, A.VarDecl):
            self.var_decl(d)
        elif isinstance(d, A.ConstDecl):
            self.bind(d.name, self.comp.resolve_type(d.type))
        elif isinstance(d, A.ActionDecl):
            self.callables[d.name] = d
            self.function_body(d)
        elif isinstance(d, A.TableDecl):
            self.callables[d.name] = d
            self.table(d)
        elif isinstance(d, A.FunctionDecl):
            self.callables[d.name] = d
            self.function_body(d)
        else:
            raise CompileError(d.loc, f"unsupported local declaration {type(d).__name__}")

    def function_body(self, d):
        self.scopes.append({})
        for p in d.params:
            self.bind(p.name, self.comp.resolve_type(p.type))
        self.stmt(d.body)
        self.scopes.pop()

    def table(self, t):
        for prop in t.properties:
            if prop.name == "key":
                for k in prop.value:
                    self.expr(k.expr)
            elif prop.name in ("actions",):
                for ref in prop.value:
                    name = ref.name.name
                    if name not in self.callables and self.comp.globals.lookup(name) is None:
                        raise CompileError(ref.loc, f"action '{name}' is not declared")

    # ---------------------------------------------------------- statements
    def stmts(self, stmts):
        for s in stmts:
            self.stmt(s)

    def stmt(self, s):
        if s is None or isinstance(s, A.Empty):
            return
        if isinstance(s, A.Block):
            self.scopes.append({})
            self.stmts(s.stmts)
            self.scopes.pop()
        elif isinstance(s, A.Assign):
            self.assign(s)
        elif isinstance(s, A.CallStmt):
            self.expr(s.call)
        elif isinstance(s, A.If):
            self.expect_bool(s.cond)
            self.stmt(s.then)
            self.stmt(s.other)
        elif isinstance(s, A.VarDecl):
            self.var_decl(s)
        elif isinstance(s, A.Switch):
            self.expr(s.expr)
            for case in s.cases:
                self.stmt(case.body)
        elif isinstance(s, (A.Return,)):
            if s.value is not None:
                self.expr(s.value)
        elif isinstance(s, (A.Exit, A.Transition)):
            if isinstance(s, A.Transition):
                self.transition_stmt(s)
        elif isinstance(s, A.Instance):
            self.declare_local(s)
        else:
            raise CompileError(s.loc, f"unsupported statement {type(s).__name__} (check-only TNA)")

    def var_decl(self, d):
        t = self.comp.resolve_type(d.type)
        if d.init is not None:
            self.compatible(t, self.expr(d.init), d.init.loc, f"initializer of '{d.name}'")
        self.bind(d.name, t)

    def assign(self, s):
        lt = self.expr(s.lhs)
        rt = self.expr(s.rhs)
        self.compatible(lt, rt, s.loc, "assignment")

    def transition_stmt(self, tr):
        if tr.next is not None:
            if tr.next not in ("accept", "reject") and tr.next not in self.callables:
                raise CompileError(tr.loc, f"state '{tr.next}' is not declared")
        else:
            for e in tr.select:
                self.expr(e)
            for loc, _keyset, state, _state_loc in tr.cases:
                if state not in ("accept", "reject") and state not in self.callables:
                    raise CompileError(loc, f"state '{state}' is not declared")

    # ---------------------------------------------------------- expressions
    def expect_bool(self, e):
        t = self.expr(e)
        if t is not UNKNOWN and not isinstance(t, BoolT):
            raise CompileError(e.loc, f"condition must be bool, not {t}")

    def compatible(self, want, have, loc, what):
        if want is UNKNOWN or have is UNKNOWN or isinstance(have, IntT):
            return
        if isinstance(want, Bits) and isinstance(have, Bits) and want.width != have.width:
            raise CompileError(loc, f"{what}: bit<{have.width}> value for a bit<{want.width}> "
                                    f"target (cast explicitly)")
        if isinstance(want, Bits) != isinstance(have, Bits) and not _enum_bits(want, have):
            raise CompileError(loc, f"{what}: {have} value for a {want} target")

    def expr(self, e):
        method = getattr(self, "e_" + type(e).__name__, None)
        if method is None:
            for sub in _children(e):
                self.expr(sub)
            return UNKNOWN
        return method(e)

    def e_IntLit(self, e):
        if e.width is None:
            return IntT()
        return Bits(e.width, e.signed)

    def e_BoolLit(self, e):
        return BoolT()

    def e_StrLit(self, e):
        return StringT()

    def e_Name(self, e):
        t = self.lookup(e.name, e.loc)
        return t.type if isinstance(t, TypeSym) else t

    def e_Member(self, e):
        base = self.expr(e.expr)
        if isinstance(base, EnumT) or isinstance(base, ErrorT):
            return base
        if isinstance(base, StructT):
            if base.kind in ("header", "header_union") and e.name in HEADER_METHODS:
                return ("method", HEADER_METHODS[e.name])
            ft = base.field_type(e.name)
            if ft is None:
                raise CompileError(e.loc, f"{base} has no field '{e.name}'")
            return ft
        if isinstance(base, ExternT):
            return ("extern_method", base, e.name)
        if isinstance(base, A.TableDecl) and e.name == "apply":
            return ("method", UNKNOWN)
        return UNKNOWN

    def e_Call(self, e):
        args = [a.value if isinstance(a, A.NamedArg) else a for a in e.args]
        arg_types = [self.expr(a) for a in args]
        f = self.expr(e.func)
        if isinstance(f, tuple) and f[0] == "method":
            return f[1]
        if isinstance(f, tuple) and f[0] == "extern_method":
            return self.extern_call(e, f[1], f[2], args, arg_types)
        if isinstance(f, (A.ActionDecl, A.FunctionDecl)):
            return self.local_call(e, f, args, arg_types)
        return UNKNOWN

    def local_call(self, e, decl, args, arg_types):
        if len(args) != len(decl.params):
            raise CompileError(e.loc, f"'{decl.name}' takes {len(decl.params)} arguments, "
                                      f"got {len(args)}")
        for p, a, t in zip(decl.params, args, arg_types):
            self.compatible(self.comp.resolve_type(p.type), t, a.loc,
                            f"argument '{p.name}' of '{decl.name}'")
        ret = getattr(decl, "ret", None)
        return UNKNOWN if ret is None or ret.name in decl.type_params else self.comp.resolve_type(ret)

    def extern_call(self, e, ext, name, args, arg_types):
        methods = [m for m in ext.decl.methods if m.name == name]
        if not methods:
            raise CompileError(e.loc, f"extern {ext.name} has no method '{name}'")
        fitting = [m for m in methods if _min_args(m) <= len(args) <= len(m.params)]
        if not fitting:
            counts = sorted({len(m.params) for m in methods})
            raise CompileError(e.loc, f"{ext.name}.{name} takes {' or '.join(map(str, counts))} "
                                      f"arguments, got {len(args)}")
        m = fitting[0]
        env = dict(zip(ext.decl.type_params, ext.type_args))
        for p, a, t in zip(m.params, args, arg_types):
            want = self.method_type(p.type, m, env)
            self.compatible(want, t, a.loc, f"argument '{p.name}' of {ext.name}.{name}")
        return self.method_type(m.ret, m, env)

    def method_type(self, tr, method, env):
        """A method's parameter/return type with the instance's type arguments bound."""
        if tr.name in env:
            return env[tr.name]
        if tr.name in method.type_params or tr.name == "_" or tr.args:
            return UNKNOWN
        return self.comp.resolve_type(tr)

    def e_Cast(self, e):
        self.expr(e.expr)
        return self.comp.resolve_type(e.type)

    def e_Slice(self, e):
        self.expr(e.expr)
        hi = self.comp.const_int(e.hi, None, "slice bound")
        lo = self.comp.const_int(e.lo, None, "slice bound")
        return Bits(hi - lo + 1)

    def e_Unary(self, e):
        if e.op == "!":
            self.expect_bool(e.expr)
            return BoolT()
        return self.expr(e.expr)

    def e_Binary(self, e):
        if e.op in ("&&", "||"):
            self.expect_bool(e.left)
            self.expect_bool(e.right)
            return BoolT()
        lt, rt = self.expr(e.left), self.expr(e.right)
        if e.op in ("<<", ">>"):
            return lt
        if e.op == "++":
            if isinstance(lt, Bits) and isinstance(rt, Bits):
                return Bits(lt.width + rt.width)
            return UNKNOWN
        if isinstance(lt, Bits) and isinstance(rt, Bits) and lt.width != rt.width:
            raise CompileError(e.loc, f"operands of '{e.op}' have different widths: "
                                      f"bit<{lt.width}> and bit<{rt.width}>")
        if e.op in COMPARISONS:
            return BoolT()
        return lt if not isinstance(lt, IntT) else rt

    def e_Ternary(self, e):
        self.expect_bool(e.cond)
        a, b = self.expr(e.then), self.expr(e.other)
        return a if not isinstance(a, IntT) else b

    def e_ListExpr(self, e):
        return TupleT([self.expr(x) for x in e.items])


def _min_args(method):
    return sum(1 for p in method.params if not any(a.name == "optional" for a in p.annos))


def _enum_bits(a, b):
    return any(isinstance(t, EnumT) and t.base is not None for t in (a, b))


def _children(e):
    for v in vars(e).values():
        if isinstance(v, A.Expr):
            yield v
        elif isinstance(v, list):
            yield from (x for x in v if isinstance(x, A.Expr))

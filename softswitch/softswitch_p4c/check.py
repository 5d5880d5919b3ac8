"""The checker phase: a program's parsers and controls (with those they instantiate),
actions and functions resolved and typed into the IR (`ir.py`); compile-time values.

Names resolve to their declarations (block scopes, then the block's actions, tables,
functions and states, then the top level's); expressions get their types. Type errors
raise CompileError at the first one, with the BMv2 emitter's message for the same rule:
undeclared names, fields, enum and error members, extern methods, parser states and
table actions; values that do not convert to the type they meet (`convert`, P4-16
8.11.2) in assignments, returns, `?:` branches, binary operators and call arguments
(actions, functions, a table's actions list, default and entry actions, extern methods:
arity with `@optional` parameters and defaults, types with the instance's and the call's
type arguments bound; sub-parsers' and sub-controls' `apply` and constructors); casts
that do not exist; shifts, `++`, saturating operators and slices of what they do not
take; the arity of every call and instance but a package's: constructors (extern
instances, top-level ones as they are declared, and `implementation =
action_profile(N)`; a parser's or control's constructor parameters), header and stack
methods, a table's and a sub-block's `apply`; conditions that are not `bool`;
assignments to constants and to read-only parameters; a `return` with a value where
none is returned, `break`/`continue` outside a loop; an initializer's methods that do
not implement an abstract method of the extern (count, directions, types); duplicate
parameters and parser states; duplicate declarations in a block (its parameters and
locals, a statement list's, an action's parameters and its body's); duplicate table
properties, undeclared match kinds, a second `lpm` key, default and entry actions
missing from the table's actions list; extern function calls (overloads by arity,
widths); `extract` of anything but a header (a header union neither), its varbit length
exactly when the header has a varbit field, `lookahead` without one type argument; a
`switch` on
anything but a bit<>, int<>, enum or error value or a table's `apply().action_run`, and
a label of the latter that is not one of the table's actions; members that do not exist
(of a header union: fields and `isValid`; of a stack, a table's `apply()` result, a
type, a value without members); operators applied to what they do not take (arithmetic
and `-`/`~` on anything but bit<>, int<> and integers; comparisons of bool, enum, error,
varbit, header, struct and stack values with other types or with an ordering operator,
but a serializable enum's). A call's result has its type when a generic method or
function returns one of its own type parameters (bound by the call's type arguments,
`lookahead<T>()`, or its arguments' types), and a generic top-level function's body is
checked again for each call with those types. Names in table properties and select
keysets are resolved too; a select's keys are bit<>, bool or enum values and its cases
give one constant value, mask or (non-empty) range per key that fits it. Not checked
yet: the types of a select's keyset values, arguments of a generic method's or
function's type parameters that neither the call's type arguments nor an earlier
argument bind.

Every typed expression also carries its compile-time `value` (constant folding: literals,
constants, enum and error members, a stack's size, minSizeInBits/Bytes, operators, casts,
slices, `?:`, static_assert decided here). That is the front-end's compile-time
evaluation: the top level's constants, widths, stack sizes and enum values
(`Compiler.declare_global`) and the passes' `type_of` / `const_value` check an expression
here, in the emitter's scope (`outer`).

Both paths run it on whole blocks before anything is lowered (`tna.check_program`,
`check_v1model`; both keep the program's expression nodes: `record`, which tna_lower.py
reads its decisions from). The BMv2 emitter
reads types and values from those nodes instead of keeping copies of these rules: from
the program's where the passes left an expression as it was checked (`ExprMixin.node`),
else from the expression checked again in its own scope (`ExprMixin.typed`, `nodes`
records the sub-expressions) (README.md, "Architecture: phases").
"""
from . import ast as A
from .ast import describe, name_loc
from . import ir
from .errors import CompileError, CompileWarning, unsupported
from .symbols import (ActionSym, BlockSym, ExternFuncSym, ExternInstance, FuncSym, Scope,
                      TypeSym, ValueSetSym)
from .types import (BlockT, Bits, BoolT, DontCareT, EnumT, ErrorT, ExternT, IntT, StackT,
                    StructT, StringT, TupleT, TypeVar, VarbitT, VoidT, same_type,
                    storage_width)
from .unroll import Unroller
from .values import Val, fold_binary, fold_unary, mask_of, wrap

HEADER_METHODS = {"isValid": BoolT(), "setValid": VoidT(), "setInvalid": VoidT(),
                  "minSizeInBits": IntT(), "minSizeInBytes": IntT()}
COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")
UNKNOWN = None      # a type this checker does not track (generic results); never an error
FINAL_STATES = ("accept", "reject")
STACK_MEMBERS = {"size": Bits(32), "lastIndex": Bits(32), "push_front": UNKNOWN,
                 "pop_front": UNKNOWN}
STACK_ELEMENTS = ("next", "last")


class BlockChecker:
    """Resolves and types one parser or control (or, with `decl` None, top-level extern
    instances, actions and functions, or one expression) against the declarations of
    `outer` (a `symbols.Scope`; the global one, `comp.globals`, unless given), the
    top-level extern instances `externs` (name -> ir.Instance) and the top-level actions
    and functions checked so far, `top` (name -> ir.Action / ir.Function)."""

    def __init__(self, comp, decl, externs, top=None, outer=None):
        self.comp = comp
        self.decl = decl
        self.outer = outer or comp.globals
        self.externs = externs
        self.scopes = [dict(externs)]
        self.callables = {}          # action / table / state / function names of the block
        self.top = top or {}
        self.type_env = {}           # a generic function's type parameters, in its body
        self.nodes = None            # id(AST expression) -> (it, its IR node), when recording
        self.program_nodes = None    # the same for the program's IR (check_v1model): record()
        self.unrolled = None         # id(loop) -> (it, its iterations): check_v1model's unroll
        self.ctor_values = {}        # constructor parameter -> its value in this copy (bind.py)
        self.ret_type = None         # the return type of the function or action (void)
        self.loops = 0               # loops around the statement being checked
        self.loop_init = False       # checking a for loop's initializer

    def resolve(self, tr, type_env=None):
        """The type a TypeRef names here (type parameters as TypeVar)."""
        return self.comp.resolve_type(tr, self.outer, type_env if type_env is not None
                                      else self.type_env)

    def block(self):
        """The block as an ir.Parser or ir.Control."""
        d = self.decl
        self.scopes.append({})                  # parameters and locals: one namespace
        params = [self.param(p) for p in d.params]
        params += [self.ctor_param(p) for p in d.ctor_params or []]
        _unique_names(d.params + (d.ctor_params or []) + d.locals)
        locals_ = [self.declare_local(local) for local in d.locals]
        if isinstance(d, A.ParserDecl):
            states = [ir.State(st.loc, st.name, st) for st in d.states]
            for st in states:
                if st.name in FINAL_STATES or isinstance(self.callables.get(st.name), ir.State):
                    raise CompileError(st.loc, f"duplicate parser state '{st.name}'")
                self.callables[st.name] = st
            for st in states:
                self.scopes.append({})          # a state's own variables
                st.stmts = self.stmts(st.ast.stmts)
                if st.ast.transition is not None:
                    st.transition = self.transition_stmt(st.ast.transition)
                self.scopes.pop()
            return ir.Parser(d.loc, d.name, d, params, locals_, states)
        return ir.Control(d.loc, d.name, d, params, locals_, self.stmt(d.body))

    def instance(self, d):
        """An instance: its type and checked constructor arguments; of an extern, the
        methods of its initializer (a RegisterAction's `apply`); of a parser or control
        type with a body (a sub-block), that block checked."""
        inst = ir.Instance(d.loc, d.name, d, self.resolve(d.type),
                           [self.expr(_arg_value(a)) for a in d.args])
        self.check_constructor(d, inst.type, inst.args)
        self.bind(inst)
        self.scopes.append({})              # instances declared in the initializer
        for m in d.initializer or []:
            if isinstance(m, A.Instance):
                self.instance(m)
            else:
                self.check_implements(m, inst)
                inst.methods.append(self.function_body(m, ir.Function, named=False))
        self.scopes.pop()
        sub = inst.type.decl if isinstance(inst.type, BlockT) else None
        if isinstance(sub, A.ControlDecl) and sub.body is not None or \
                isinstance(sub, A.ParserDecl) and sub.states:
            checker = BlockChecker(self.comp, sub, self.externs, self.top)
            checker.program_nodes, checker.unrolled = self.program_nodes, self.unrolled
            inst.block = checker.block()
        return inst

    def check_constructor(self, d, t, args):
        """The constructor arguments `args` of instance (or call) `d` of type `t`: of an
        extern, they select one of its constructors (arity, types); of a parser or control,
        they fit its constructor parameters (arity)."""
        if isinstance(t, ExternT):
            ctors = [m for m in t.decl.methods if m.ret is None]
            self.overload(d, ctors, t.name, args, dict(zip(t.decl.type_params, t.type_args)))
        elif isinstance(t, BlockT) and not isinstance(t.decl, A.PackageDecl):
            self.check_block_args(d, t.decl.name, t.decl.ctor_params or [], args)

    def check_implements(self, m, inst):
        """A method of an initializer implements an abstract method of the extern, with its
        parameters' count, directions and types (the instance's type arguments bound)."""
        ext = inst.type
        abstract = next((a for a in ext.decl.methods if a.abstract and a.name == m.name),
                        None) if isinstance(ext, ExternT) else None
        if abstract is None:
            raise CompileError(m.loc, f"'{m.name}' is not an abstract method of {ext}")
        if not min_args(abstract) <= len(m.params) <= len(abstract.params):
            raise CompileError(m.loc, f"'{m.name}' of '{inst.name}' has {len(m.params)} "
                                      f"parameters; {ext.name}.{m.name} takes "
                                      f"{min_args(abstract)} to {len(abstract.params)}")
        env = dict(zip(ext.decl.type_params, ext.type_args))
        for p, ap in zip(m.params, abstract.params):
            if p.direction != ap.direction:
                raise CompileError(p.loc, f"parameter '{p.name}' of '{m.name}' must be "
                                          f"'{ap.direction or 'directionless'}' "
                                          f"({ext.name}.{m.name})")
            self.compatible(self.method_type(ap.type, abstract, env), self.resolve(p.type),
                            p.loc, f"parameter '{p.name}' of '{m.name}'")

    # ---------------------------------------------------------- scopes
    def bind(self, decl):
        """Declare `decl` in the innermost scope (once); returns it."""
        if decl.name in self.scopes[-1]:
            raise CompileError(decl.loc, f"duplicate declaration of '{decl.name}'")
        self.scopes[-1][decl.name] = decl
        return decl

    def param(self, p, kind="param", read_only=("in",)):
        """A parameter: of a block, read-only when `in`; of an action or function
        (`read_only` ("", "in")), directionless ones too."""
        return self.bind(ir.Variable(p.loc, p.name, p, self.resolve(p.type), kind,
                                     read_only=kind == "param" and p.direction in read_only))

    def ctor_param(self, p):
        """A constructor parameter; a constant where the instance's argument is bound for
        this copy of the block (`ctor_values`, bind.py)."""
        var = self.param(p, "ctor")
        var.value = self.ctor_values.get(p.name)
        return var

    def lookup(self, name, loc):
        """The IR declaration of `name`, or its global symbol."""
        for s in reversed(self.scopes):
            if name in s:
                return s[name]
        if name in self.callables:
            return self.callables[name]
        if name in self.top:
            return self.top[name]
        sym = self.outer.lookup(name)
        if sym is None:
            raise CompileError(loc, f"undeclared identifier '{name}'")
        return sym

    def declare_local(self, d):
        if isinstance(d, A.Instance):
            return self.instance(d)
        if isinstance(d, (A.VarDecl, A.Temp)):        # a parser's initializer's: order.py
            return self.stmt(d)
        if isinstance(d, A.ConstDecl):
            return self.constant(d.name, d.type, d.value, d)
        if isinstance(d, A.ActionDecl):
            return self.function_body(d, ir.Action)
        if isinstance(d, A.TableDecl):
            return self.table(d)
        if isinstance(d, A.FunctionDecl):
            return self.function_body(d, ir.Function)
        if isinstance(d, A.ValueSetDecl):
            return self.bind(ir.Variable(d.loc, d.name, d, self.resolve(d.type), "value_set"))
        raise unsupported(d.loc, f"local declaration {type(d).__name__}")

    def function_body(self, d, kind, named=True, type_env=None, values=None):
        """An action, function or (`named` False) an extern method an initializer
        implements; a block's own is named before its body is checked (it may recurse).
        A generic function's type parameters are TypeVars, or `type_env`'s types. The
        parameters named in `values` are constants of those values (a call's constant
        arguments bound in its copy, bind.py)."""
        fn = kind(d.loc, d.name, d)
        if named:
            self.callables[d.name] = fn
        self.scopes.append({})
        outer_env, self.type_env = self.type_env, type_env or _type_params(d)
        outer_ret, outer_loops = self.ret_type, self.loops
        self.ret_type = self.resolve(d.ret) if getattr(d, "ret", None) is not None else VoidT()
        self.loops = 0
        fn.params = [self.param(p, read_only=("", "in")) for p in d.params]
        for var in fn.params:
            var.value = (values or {}).get(var.name)
        fn.body = ir.Block(d.body.loc, self.stmts(d.body.stmts))   # in the parameters' scope
        self.scopes.pop()
        self.type_env, self.ret_type, self.loops = outer_env, outer_ret, outer_loops
        return fn

    def table(self, t):
        table = ir.Table(t.loc, t.name, t)
        self.callables[t.name] = table
        seen = set()
        for prop in t.properties:
            if prop.name in seen:
                raise CompileError(prop.loc, f"duplicate table property '{prop.name}'")
            seen.add(prop.name)
            value = prop.value
            if prop.name == "key":
                self.check_match_kinds(t, value)
                table.keys += [self.key(k) for k in value]
            elif prop.name == "actions":
                table.actions += [self.action_call(r.name, r.args or [], r.loc) for r in value]
            elif prop.name == "entries":
                table.entries += [self.entry(e) for e in value]
            elif prop.name == "default_action" and isinstance(value, A.Name):
                table.default_action = self.action_call(value, [], value.loc, all_args=True)
            elif prop.name == "default_action" and isinstance(value, A.Call) and \
                    isinstance(value.func, A.Name):
                table.default_action = self.action_call(value.func, value.args, value.func.loc,
                                                        all_args=True)
            else:
                table.properties.append(ir.Property(prop.loc, prop.name, self.expr(value)))
        if "actions" not in seen:
            raise CompileError(t.loc, f"table '{t.name}' has no actions property")
        listed = [a.callee for a in table.actions]
        for i, a in enumerate(table.actions):
            if any(a.callee is b for b in listed[:i]):
                raise CompileError(a.loc, f"action '{a.func.name}' listed twice")
        if table.default_action is not None and table.default_action.callee not in listed:
            func = table.default_action.func
            raise CompileError(func.loc, f"default action '{func.name}' is not in the actions "
                                         f"list of table '{t.name}'")
        for e in table.entries:
            if e.action.callee not in listed:
                raise CompileError(e.action.loc, f"action '{e.action.func.name}' is not in the "
                                                 f"actions list of table '{t.name}'")
        return table

    def key(self, k):
        """A table key; after order.py, with the statements that compute it first
        (`KeyElement.prep`, declaring the temporaries it reads)."""
        if not k.prep:
            return self.expr(k.expr)
        self.scopes.append({})
        self.stmts(k.prep)
        node = self.expr(k.expr)
        self.scopes.pop()
        return node

    def check_match_kinds(self, t, keys):
        """Every key's match kind is declared; at most one is lpm."""
        lpm_seen = False
        for k in keys:
            if k.match_kind not in self.comp.match_kinds:
                raise CompileError(k.match_loc, f"undeclared match kind '{k.match_kind}'")
            if k.match_kind == "lpm" and lpm_seen:
                raise CompileError(k.loc, f"table '{t.name}' has more than one lpm key")
            lpm_seen = lpm_seen or k.match_kind == "lpm"

    def action_call(self, func, args, loc, all_args=False):
        """An action a table names (actions list, default action, entry), with arguments:
        `all_args` (default action, entry), one for every parameter, checked; in the
        actions list, those of the directional parameters only."""
        action = self.callables.get(func.name) or self.top.get(func.name) or \
            self.outer.lookup(func.name)
        if not isinstance(action, (ir.Action, ActionSym)):
            raise CompileError(loc, f"undeclared action '{func.name}'")
        call = ir.Call(loc, UNKNOWN, ir.Ref(func.loc, UNKNOWN, func.name, action),
                       [self.expr(_arg_value(a)) for a in args], action)
        decl = action.decl if isinstance(action, ActionSym) else action.ast
        self.warn_if_deprecated(loc, decl)
        if all_args:
            self.check_args(loc, decl, call.args, args)
        else:                                   # the directional parameters' arguments
            for p, a in _pairs([p for p in decl.params if p.direction], args, call.args):
                self.compatible_arg(self.resolve(p.type), a, p.name, decl.name,
                                    p.direction)
            self.record_dontcares(args, call.args)
        self.check_out_args(decl.params, args, call.args)
        return call

    def entry(self, e):
        keys = [self.expr(k) for k in e.keys]
        action = self.action_call(e.action.name, e.action.args or [], e.action.loc,
                                  all_args=True)
        priority = self.expr(e.priority) if e.priority is not None else None
        return ir.Entry(e.loc, keys, action, priority)

    # ---------------------------------------------------------- statements
    def stmts(self, stmts):
        return [n for n in (self.stmt(s) for s in stmts) if n is not None]

    def stmt(self, s):
        if s is None or isinstance(s, A.Empty):
            return None
        if isinstance(s, A.Block):
            self.scopes.append({})
            block = ir.Block(s.loc, self.stmts(s.stmts))
            self.scopes.pop()
            return block
        if isinstance(s, A.Assign):
            return self.assign(s)
        if isinstance(s, A.CallStmt):
            return ir.CallStmt(s.loc, self.expr(s.call))
        if isinstance(s, A.If):
            cond = self.expect_bool(s.cond, "condition of 'if'")
            return ir.If(s.loc, cond, self.stmt(s.then), self.stmt(s.other))
        if isinstance(s, A.VarDecl):
            return self.var_decl(s)
        if isinstance(s, A.Temp):              # order.py's: of its value's type
            value = self.expr(s.value)
            return self.bind(ir.Variable(s.loc, s.name, s, value.type, "var", value))
        if isinstance(s, A.Switch):
            node = self.switch_expr(s.expr)
            for c in s.cases:
                self.switch_label(c, node)
            return ir.Switch(s.loc, node, [self.stmt(c.body) for c in s.cases])
        if isinstance(s, A.Return):
            return self.return_stmt(s)
        if isinstance(s, A.Exit):
            return ir.Exit(s.loc)
        if isinstance(s, A.Transition):
            return self.transition_stmt(s)
        if isinstance(s, A.Instance):
            return self.declare_local(s)
        if isinstance(s, (A.For, A.ForIn)):
            return self.loop(s)
        if isinstance(s, (A.SwitchChain, A.SplitStmt, A.InlinedBlock)):
            return self.rewritten(s)
        if isinstance(s, (A.Break, A.Continue)):
            word = type(s).__name__.lower()
            if not self.loops:
                raise CompileError(s.loc, f"'{word}' outside a loop")
            return ir.Jump(s.loc, word)
        raise unsupported(s.loc, f"statement {type(s).__name__}")

    def rewritten(self, s):
        """A statement the passes before lowering wrote (a copy inline.py made holds them;
        bind.py checks it again): what the emitter lowers. A split statement's own
        declaration stays in scope; an application's copy is another block."""
        if isinstance(s, A.SwitchChain):
            return self.stmt(s.chain)
        if isinstance(s, A.InlinedBlock):
            return ir.CallStmt(s.loc, self.expr(s.call))
        if s.error is not None:
            raise s.error
        return ir.Block(s.loc, self.stmts(s.stmts))

    def return_stmt(self, s):
        """A `return`'s value converts to the function's return type; an action, a void
        function and a control's apply block return none."""
        if s.value is not None and isinstance(self.ret_type, VoidT):
            raise CompileError(s.value.loc, "this return statement cannot return a value")
        if s.value is not None and self.ret_type is None and isinstance(self.decl, A.ControlDecl):
            raise CompileError(s.loc, "a control's apply block cannot return a value")
        value = self.expr(s.value) if s.value is not None else None
        if value is not None and self.ret_type is not None:
            self.compatible(self.ret_type, value.type, s.value.loc, "assignment")
        return ir.Return(s.loc, value)

    def switch_expr(self, e):
        """A switch is on a table's `apply().action_run` or on a bit<>, int<>, enum or error
        value."""
        node = self.expr(e)
        t = node.type
        if not _is_action_run(node) and t is not UNKNOWN and not isinstance(t, (Bits, EnumT, ErrorT)):
            raise CompileError(e.loc, f"switch expression must be bit<>, int<>, an enum or "
                                      f"error, not {t}")
        return node

    def switch_label(self, case, node):
        """A label of a switch on `t.apply().action_run` names an action of table `t`; one
        of a switch on a value is a value of its type."""
        if isinstance(case.label, A.DefaultExpr):
            return
        if not _is_action_run(node):          # a value of the switch expression's type
            label = self.expr(case.label)
            self.compatible(node.type, label.type, case.label.loc, "switch label")
            return
        if not isinstance(case.label, A.Name):
            raise CompileError(case.loc, "switch labels must be action names")
        name = case.label.name
        action = self.callables.get(name) or self.top.get(name) or self.outer.lookup(name)
        if not isinstance(action, (ir.Action, ActionSym)):
            raise CompileError(case.label.loc, f"undeclared action '{name}'")
        table = node.base.func.base.decl
        if action not in [a.callee for a in table.actions]:
            raise CompileError(case.label.loc, f"action '{name}' is not an action of table "
                                               f"'{table.name}'")

    def loop(self, s):
        """A loop's variables are in scope in its condition, updates and body only."""
        self.scopes.append({})
        if isinstance(s, A.ForIn):
            var = ir.Variable(s.loc, s.name, s, self.resolve(s.type), "var")
            init, cond, updates = [var], self.expr(s.range), []
            self.bind(var)
        else:
            self.loop_init = True           # an `int` loop variable: unrolled as a constant
            init = self.stmts(s.init)
            self.loop_init = False
            cond = self.expect_bool(s.cond, "loop condition") if s.cond is not None else None
            updates = self.stmts(s.updates)
        self.loops += 1
        loop = ir.Loop(s.loc, init, cond, updates, self.stmt(s.body))
        self.loops -= 1
        self.scopes.pop()
        if self.unrolled is not None and not self.type_env and id(s) not in self.unrolled \
                and not isinstance(self.decl, A.ParserDecl):   # a state's: refused by the emitter
            self.unroll(s)
        return loop

    def unroll(self, s):
        """Loop `s`'s iterations (unroll.py) where this scope decides them (bounds and
        `break`/`continue` conditions compile-time here: the block's and the top level's
        constants; checked again by bind.py, a copy's constructor and call arguments
        too), kept in `unrolled` for `unroll.replace_loops`. A loop they depend on
        run-time values or on constants only the emitter's scope knows, or that
        unroll.py refuses, is left to the emitter, which unrolls it (or reports it) as it
        reaches it."""
        try:
            blocks = Unroller(_LoopFolder(self)).unroll(s, Scope())
        except CompileError:
            return
        # Each iteration starts by declaring the loop variables at the loop's place, so a
        # block that refuses a loop (a deparser, a checksum control) refuses its iterations
        # there with the same message; no iterations, or no variable, stay the emitter's.
        if blocks and all(b.stmts and isinstance(b.stmts[0], A.VarDecl) for b in blocks):
            self.unrolled[id(s)] = (s, A.Block(s.loc, blocks))

    def constant(self, name, type_ref, value, d):
        """A local constant: its initializer checked and folded to a value of its type."""
        t = self.resolve(type_ref)
        init = self.expr(value)
        self.compatible(t, init.type, value.loc, f"constant '{name}'")
        return self.bind(ir.Variable(d.loc, name, d, t, "const", init,
                                     convert(init.value, init.type, t, value.loc,
                                             f"constant '{name}'")))

    def var_decl(self, d):
        if d.is_const:
            return self.constant(d.name, d.type, d.init, d)
        t = self.resolve(d.type)
        if isinstance(t, ExternT) or isinstance(t, IntT) and not self.loop_init or not (
                t.is_scalar or isinstance(t, (StructT, StackT, TupleT, VarbitT, TypeVar))):
            raise CompileError(d.type.loc, f"cannot declare a variable of type {t}")
        init = None
        if d.init is not None:
            init = self.expr(d.init)
            self.compatible(t, init.type, d.init.loc, "assignment")
        return self.bind(ir.Variable(d.loc, d.name, d, t, "var", init))

    def assign(self, s):
        lhs = self.expr(s.lhs)
        self.check_writable(lhs, s.lhs)
        rhs = self.expr(s.rhs)
        self.compatible(lhs.type, rhs.type, s.loc, "assignment")
        return ir.Assign(s.loc, lhs, rhs)

    def check_writable(self, node, e):
        """What is written (an assignment's target, an `out`/`inout` argument, a header made
        valid or invalid) is storage (a name, its fields, elements and slices; `_` for an
        `out` argument), not a constant (constructor parameters included), nor inside a
        read-only parameter (`in`; an action's or function's directionless one, which the
        control plane or the caller gives)."""
        root = ir.storage_root(node)
        d = root.decl if isinstance(root, ir.Ref) else None
        if node.value is not None or isinstance(d, Val) and d.extra.get("is_const") or \
                isinstance(d, ir.Variable) and d.kind in ("const", "ctor"):
            raise CompileError(e.loc, f"cannot assign to constant '{describe(e)}'")
        if not isinstance(root, ir.Ref) and \
                not (isinstance(root, ir.Untyped) and root.form == "DefaultExpr"):
            raise CompileError(e.loc, f"'{describe(e)}' is not assignable")
        if isinstance(d, ir.Variable) and d.read_only:
            raise CompileError(e.loc, f"cannot assign to '{describe(e)}': it is a read-only "
                                      f"(in) parameter")

    def transition_stmt(self, tr):
        if tr.next is not None:
            return ir.Transition(tr.loc, [], [],
                                 [self.state(tr.next, getattr(tr, "next_loc", tr.loc))])
        select = []
        for e in tr.select:
            node = self.expr(e)
            if not _untracked(node.type) and not isinstance(node.type, (Bits, BoolT, EnumT)):
                raise CompileError(e.loc, f"cannot select on a value of type {node.type}")
            select.append(node)
        widths = [None if _untracked(n.type) else storage_width(n.type) for n in select]
        keysets = []
        for loc, keyset, _state, _state_loc in tr.cases:
            keysets.append(self.expr(keyset))
            self.check_keyset(keyset, keysets[-1], widths, loc)
        return ir.Transition(tr.loc, select, keysets,
                             [self.state(state, state_loc)
                              for _loc, _keyset, state, state_loc in tr.cases])

    def check_keyset(self, ks, node, widths, loc):
        """A select case gives one value per key (or `default`, or a value set for one
        key): compile-time values, masks and ranges (not empty) that fit the key's width."""
        if isinstance(ks, A.DefaultExpr):
            return
        items, nodes = (ks.items, node.items) if isinstance(ks, A.ListExpr) else ([ks], [node])
        if len(items) == 1 and len(widths) == 1 and _is_value_set(nodes[0]):
            return
        if len(items) != len(widths):
            raise CompileError(loc, f"select case has {len(items)} values for {len(widths)} "
                                    f"keys")
        for item, n, width in zip(items, nodes, widths):
            if isinstance(item, A.DefaultExpr) or _is_value_set(n):
                continue
            if isinstance(item, (A.Mask, A.Range)):
                values = [_keyset_value(e, p, width) for e, p in zip(_children(item), n.parts)]
                if isinstance(item, A.Range) and values[0] > values[1]:
                    raise CompileError(item.loc, f"empty range {values[0]}..{values[1]}")
            else:
                _keyset_value(item, n, width)

    def state(self, name, loc):
        if name in FINAL_STATES:
            return name
        if name not in self.callables:
            raise CompileError(loc, f"undeclared parser state '{name}'")
        return self.callables[name]

    # ---------------------------------------------------------- expressions
    def expect_bool(self, e, what):
        node = self.expr(e)
        if node.type is not UNKNOWN and not isinstance(node.type, BoolT):
            raise CompileError(e.loc, f"{what} must be bool, not {node.type}")
        return node

    def compatible(self, want, have, loc, what):
        """A value of type `have` converts to type `want` (`convert`'s rule, P4-16 8.11.2);
        a list gives a struct or header one item per field, each converting to it (as the
        emitter assigns them), and a tuple one per element."""
        if _untracked(want) or _untracked(have):
            return
        if isinstance(have, TupleT) and (isinstance(want, TupleT) or isinstance(want, StructT)
                                         and want.kind in ("struct", "header")):
            elems = want.elems if isinstance(want, TupleT) else [t for _, t in want.fields]
            if len(elems) == len(have.elems):
                for w, h in zip(elems, have.elems):
                    self.compatible(w, h, loc, what)
                return
            if isinstance(want, StructT):
                got = f", got {len(have.elems)}" if want.kind == "struct" else ""
                raise CompileError(loc, f"expected {len(elems)} values for {want}{got}")
        convert(None, have, want, loc, what)

    def compatible_arg(self, want, arg, param, callee, direction=""):
        """Argument `arg` (its IR node) for parameter `param` of type `want`. `_` is taken
        for an `out` parameter only (as p4c) and typed as it: desugar.dontcare_args makes
        it a temporary of that type."""
        have, loc = arg.type, arg.loc
        if isinstance(have, DontCareT):
            if direction != "out":
                raise CompileError(loc, "don't care argument only allowed for out parameters")
            if _untracked(want):
                raise CompileError(loc, f"cannot infer the type of '_' for parameter '{param}' "
                                        f"of '{callee}': give the type arguments")
            arg.type = want
            return
        if isinstance(want, Bits) and isinstance(have, Bits) and want.width != have.width:
            raise CompileError(loc, f"argument '{param}' of '{callee}' has type {have}, but "
                                    f"{want} is expected (width mismatch)")
        self.compatible(want, have, loc, f"argument '{param}' of '{callee}'")

    def expr(self, e):
        method = getattr(self, "e_" + type(e).__name__, None)
        if method is None:
            return ir.Untyped(e.loc, UNKNOWN, [self.expr(sub) for sub in _children(e)],
                              type(e).__name__)
        node = method(e)
        if node.value is None:
            node.value = self.fold(node)
        if self.nodes is not None:
            self.nodes[id(e)] = (e, node)
        if self.program_nodes is not None and not self.type_env:
            record(self.program_nodes, e, node)
        return node

    def const_int(self, e, what):
        """`e`'s value, which must be a compile-time integer (a width, a slice bound...)."""
        value = self.expr(e).value
        if value is None or isinstance(value, bool):
            raise CompileError(e.loc, f"{what} must be a compile-time integer constant")
        return int(value)

    # ---------------------------------------------------------- constant folding
    def fold(self, n):
        """`n`'s compile-time value (its operands' values, folded), or None when it is known
        only at run time. Operators compute with values.fold_binary / fold_unary."""
        if isinstance(n, ir.Literal):
            return None if isinstance(n.type, StringT) else wrap(n.value, n.type)
        if isinstance(n, ir.Ref):
            d = n.decl
            return d.const if isinstance(d, Val) else \
                d.value if isinstance(d, ir.Variable) else None
        if isinstance(n, ir.Member):
            return self.member_value(n)
        if isinstance(n, ir.Unary):
            v = n.operand.value
            return None if v is None else fold_unary(n.op, v, n.type)
        if isinstance(n, ir.Binary):
            return self.fold_binary(n)
        if isinstance(n, ir.Ternary):
            if n.cond.value is None:
                return None
            branch = n.then if n.cond.value else n.other
            return convert(branch.value, branch.type, n.type, branch.loc, "'?:'")
        if isinstance(n, ir.Cast):
            return _cast_value(n.operand.value, n.operand.type, n.type)
        if isinstance(n, ir.Slice):
            v = n.base.value
            return None if v is None else (v >> n.lo) & mask_of(n.hi - n.lo + 1)
        return None

    def member_value(self, n):
        """An enum member's or error's value, a header stack's size."""
        if isinstance(n.base, ir.Ref) and isinstance(n.base.decl, TypeSym):
            t = n.type
            return t.members[n.name] if isinstance(t, EnumT) else self.comp.errors[n.name]
        if isinstance(n.base.type, StackT) and n.name == "size":
            return n.base.type.size
        return None

    def fold_binary(self, n):
        a, b = n.left.value, n.right.value
        if n.op in ("/", "%"):
            if b == 0:
                raise CompileError(n.loc, "division by zero")
            if a is not None and b is not None and (a < 0 or b < 0):
                raise CompileError(n.loc, f"'{n.op}' needs non-negative operands")
        if a is None or b is None or n.type is UNKNOWN:
            return None
        lt, rt = n.left.type, n.right.type
        if n.op not in ("<<", ">>", "++", "&&", "||"):     # an untyped operand converts
            a = wrap(a, rt) if isinstance(lt, IntT) else a
            b = wrap(b, lt) if isinstance(rt, IntT) else b
        return fold_binary(n.op, a, b, n.type, rt)

    def e_IntLit(self, e):
        return ir.Literal(e.loc, IntT() if e.width is None else Bits(e.width, e.signed), e.value)

    def e_BoolLit(self, e):
        return ir.Literal(e.loc, BoolT(), e.value)

    def e_StrLit(self, e):
        return ir.Literal(e.loc, StringT(), e.value)

    def e_Name(self, e):
        if e.name == "error" and self.outer.lookup("error") is None:
            return ir.Ref(e.loc, ErrorT(), e.name, TypeSym(ErrorT()))
        decl = self.lookup(e.name, e.loc)
        return ir.Ref(e.loc, _type_of_decl(decl), e.name, decl)

    def e_Member(self, e):
        if isinstance(e.expr, A.TypeExpr):              # `bit<8>.x`
            self.type_member(self.resolve(e.expr.type), e)
        base = self.expr(e.expr)
        t = base.type
        if isinstance(base, ir.Ref) and isinstance(base.decl, TypeSym):
            self.type_member(t, e)
            return ir.Member(e.loc, t, base, e.name)
        if isinstance(t, StructT):
            if t.kind == "header" and e.name in HEADER_METHODS or \
                    t.kind == "header_union" and e.name == "isValid":
                return ir.Member(e.loc, UNKNOWN, base, e.name, e.name)
            if e.name in t.nested:                  # a struct inside a header
                return ir.Member(e.loc, t.nested[e.name][0], base, e.name)
            if e.name in t.wide:                    # a field laid out in pieces
                return ir.Member(e.loc, Bits(t.wide[e.name]), base, e.name)
            ft = t.field_type(e.name)
            if ft is None:
                what = {"header": "field or method", "header_union": "member"}.get(t.kind, "field")
                raise CompileError(name_loc(e), f"no {what} '{e.name}' in {t}")
            return ir.Member(e.loc, ft, base, e.name)
        if isinstance(t, StackT):
            if e.name in STACK_ELEMENTS:
                return ir.Member(e.loc, t.elem, base, e.name)
            if e.name not in STACK_MEMBERS:
                raise CompileError(name_loc(e), f"header stack has no member '{e.name}'")
            return ir.Member(e.loc, STACK_MEMBERS[e.name], base, e.name)
        if isinstance(t, ExternT):
            if not any(m.name == e.name for m in t.decl.methods):
                raise CompileError(name_loc(e), f"extern {t.name} has no method '{e.name}'")
            return ir.Member(e.loc, UNKNOWN, base, e.name, e.name)
        if isinstance(getattr(base, "decl", None), ir.Table):
            if e.name != "apply":
                raise CompileError(name_loc(e), f"table '{base.name}' has no member '{e.name}'")
            return ir.Member(e.loc, UNKNOWN, base, e.name, e.name)
        if _applies_table(base) and e.name in ("hit", "miss"):
            return ir.Member(e.loc, BoolT(), base, e.name)
        if _applies_table(base) and e.name != "action_run":
            raise CompileError(e.loc, f"table apply result has no member '{e.name}'")
        if isinstance(t, (Bits, BoolT, IntT, VarbitT, TupleT, EnumT, ErrorT)):
            raise CompileError(name_loc(e), f"{t} has no member '{e.name}'")
        if isinstance(base, ir.Ref) and isinstance(base.decl, (ExternFuncSym, ActionSym, FuncSym,
                                                               ir.Action, ir.Function)) or \
                isinstance(base, ir.Member) and base.method is not None:    # `pkt.extract.x`
            raise CompileError(name_loc(e), f"'{describe(e.expr)}' has no member '{e.name}'")
        return ir.Member(e.loc, UNKNOWN, base, e.name)

    def type_member(self, t, e):
        """`E.member` / `error.member` names a declared member; other types have none."""
        if isinstance(t, EnumT) and e.name not in t.members:
            raise CompileError(name_loc(e), f"enum {t.name} has no member '{e.name}'")
        if isinstance(t, ErrorT) and e.name not in self.comp.errors:
            raise CompileError(name_loc(e), f"undeclared error 'error.{e.name}'")
        if not isinstance(t, (EnumT, ErrorT)):
            raise CompileError(e.loc, f"type {t} has no member '{e.name}'")

    def e_Call(self, e):
        args = [self.expr(_arg_value(a)) for a in e.args]
        func = self.expr(e.func)
        call = ir.Call(e.loc, UNKNOWN, func, args)
        if isinstance(func, ir.Member) and isinstance(func.base.type, StructT) and \
                func.method is not None:
            check_count(e.loc, func.name, len(args), 0, 0)
            call.type, call.callee = HEADER_METHODS[func.name], func.method
            if func.name in ("setValid", "setInvalid"):
                self.check_writable(func.base, e.func)
            if func.name.startswith("minSizeIn"):       # P4-16 8.9: a constant
                bits = func.base.type.width()
                call.value = bits if func.name == "minSizeInBits" else bits // 8
        elif isinstance(func, ir.Member) and isinstance(func.base.type, ExternT):
            call.callee = self.extern_method(e, func.base.type, func.name, args)
            func.method = call.callee
            env = dict(zip(func.base.type.decl.type_params, func.base.type.type_args))
            call.type = self.result_type(e, call.callee, args, env)
        elif isinstance(func, ir.Ref) and isinstance(func.decl, ExternFuncSym) and \
                func.name == "static_assert":
            call.type, call.value = BoolT(), self.static_assert(e, args)
        elif isinstance(func, ir.Ref) and isinstance(func.decl, ExternFuncSym):
            call.callee = self.overload(e, func.decl.overloads, func.name, args, {})
            call.type = self.result_type(e, call.callee, args, {})
        elif isinstance(func, ir.Ref) and isinstance(func.decl, (ir.Action, ir.Function)):
            call.callee = func.decl
            call.type = self.local_call(e, func.decl.ast, args)
            self.check_specialized(e, func.decl, args)
        elif isinstance(func, ir.Ref) and isinstance(func.decl, (ActionSym, FuncSym)):
            call.type = self.local_call(e, func.decl.decl, args)    # in the emitter's scope
        elif isinstance(func, ir.Ref) and isinstance(func.decl, TypeSym) and \
                isinstance(func.decl.type, ExternT):       # `implementation = action_profile(N)`
            call.type = func.decl.type
            self.check_constructor(e, call.type, args)
        elif isinstance(func, ir.Member):
            self.check_apply_and_stack_arity(e, func, args)
        if isinstance(call.callee, (A.Method, ir.Action, ir.Function)):
            decl = call.callee if isinstance(call.callee, A.Method) else call.callee.ast
            self.check_out_args(decl.params, e.args, args)
            self.warn_if_deprecated(e.loc, decl)
        self.record_dontcares(e.args, args)
        return call

    def warn_if_deprecated(self, loc, decl):
        """A call of a declaration annotated `@deprecated("text")` warns with its text, as
        p4c does. Recorded by the checker phase only (`program_nodes`: not by bind.py's or
        the emitter's checks again), once per place (a sub-block's body is checked as
        declared and per instance)."""
        anno = A.find_annotation(decl.annos, "deprecated")
        if anno is None or self.program_nodes is None:
            return
        text = "".join(a.value for a in anno.args if isinstance(a, A.StrLit))
        warning = CompileWarning(loc, f"'{decl.name}' is deprecated" + (text and f": {text}"))
        if warning not in self.comp.warnings:
            self.comp.warnings.append(warning)

    def record_dontcares(self, arg_asts, args):
        """A `_` argument typed as its `out` parameter (`compatible_arg`) is kept with that
        type, whatever an earlier check of the same body recorded (untyped then), for
        desugar.dontcare_args."""
        if self.program_nodes is None or self.type_env:
            return
        for a, node in zip(arg_asts, args):
            a = _arg_value(a)
            if isinstance(a, A.DefaultExpr) and not isinstance(node.type, DontCareT):
                self.program_nodes[id(a)] = (a, node)

    def check_apply_and_stack_arity(self, e, func, args):
        """A table's `apply()` takes no arguments; a sub-parser's or sub-control's `apply` (of an
        instance, or of its type: direct invocation) takes the block's parameters; a stack's
        push_front / pop_front, a count."""
        decl = getattr(func.base, "decl", None)
        if isinstance(decl, ir.Table) and func.name == "apply" and args:
            raise CompileError(e.loc, "table apply() takes no arguments")
        elif isinstance(func.base.type, StackT) and func.name in ("push_front", "pop_front"):
            check_count(e.loc, func.name, len(args), 1, 1)
            self.compatible_arg(IntT(), args[0], "count", func.name)
        elif func.name == "apply" and isinstance(decl, (ir.Instance, ir.Variable)) and \
                isinstance(decl.type, BlockT):          # an instance, a constructor parameter
            self.check_block_args(e, decl.name, decl.type.decl.params, args)
        elif func.name == "apply" and isinstance(decl, BlockSym) and \
                isinstance(decl.decl, (A.ControlDecl, A.ParserDecl)):
            self.check_block_args(e, decl.decl.name, decl.decl.params, args)

    def check_block_args(self, e, name, params, args):
        """Arguments (of an `apply`, or constructor arguments) for a parser's or control's
        parameters: count, types (a parser or control passed to one: its count only)."""
        check_arity(e.loc, name, params, len(args))
        for p, a in _pairs(params, e.args, args):
            t = self.resolve(p.type)
            if not isinstance(t, BlockT):
                self.compatible_arg(t, a, p.name, name, p.direction)

    def check_out_args(self, params, arg_asts, args):
        """`out` and `inout` arguments are written: no constants, nothing read-only."""
        if any(isinstance(a, A.NamedArg) for a in arg_asts):
            by_name = {a.name: (a, n) for a, n in zip(arg_asts, args)}
            pairs = [(p, by_name.get(p.name)) for p in params]
        else:
            pairs = list(zip(params, zip(arg_asts, args)))
        for p, pair in pairs:
            if pair is not None and p.direction in ("out", "inout"):
                self.check_writable(pair[1], _arg_value(pair[0]))

    def static_assert(self, e, args):
        """core.p4's static_assert, decided here: its value is true, or the compile fails."""
        if not args or len(args) > 2:
            raise CompileError(e.loc, f"wrong number of arguments to 'static_assert': "
                                      f"expected 1 or 2, got {len(args)}")
        if not isinstance(args[0].type, BoolT) or args[0].value is None:
            raise CompileError(e.args[0].loc, "static_assert needs a compile-time bool")
        if not args[0].value:
            text = args[1].value if len(args) > 1 and isinstance(args[1], ir.Literal) else ""
            raise CompileError(e.loc, f"static assertion failed{': ' + text if text else ''}")
        return True

    def local_call(self, e, decl, args):
        self.check_args(e.loc, decl, args, e.args, e.type_args)
        ret = getattr(decl, "ret", None)
        if ret is None:                         # an action
            return UNKNOWN
        if ret.name in decl.type_params:
            return self.result_type(e, decl, args, {})
        return self.resolve(ret, _type_params(decl))

    def check_specialized(self, e, fn, args):
        """A generic (top-level) function's body checked again, in the top-level scope,
        with the types a call binds to its type parameters, as the emitter specializes it
        (`a + a` is no operator on bool)."""
        d = fn.ast
        type_params = getattr(d, "type_params", [])
        env = self.bound_type_params(d, args, {}, e.type_args) if type_params else {}
        if type_params and len(env) == len(type_params):
            BlockChecker(self.comp, None, self.externs, self.top).function_body(
                d, ir.Function, named=False, type_env=env)

    def result_type(self, e, decl, args, env):
        """The type a call of method or function `decl` returns: its own type parameters
        are the call's type arguments (`lookahead<T>()`), else the types of the arguments
        of parameters declared with them (P4-16 10.2, as the emitter specializes them);
        `env` binds an instance's type parameters."""
        env = self.bound_type_params(decl, args, env, e.type_args)
        return self.method_type(decl.ret, decl, env)

    def bound_type_params(self, decl, args, env, type_args=()):
        """`env` with the type parameters of `decl` a call binds: its type arguments, else
        the types of the arguments of parameters declared with them."""
        env = dict(env)
        for tp, ta in zip(decl.type_params, type_args):
            env[tp] = self.resolve(ta)
        for p, a in zip(decl.params, args):
            name = None if p.type.args else p.type.name
            if name in decl.type_params and name not in env and not _untracked(a.type) and \
                    not isinstance(a.type, (IntT, DontCareT)):
                env[name] = a.type
        return env

    def check_args(self, loc, decl, args, arg_asts=None, type_args=()):
        """Arguments for the parameters of action or function `decl`: count, types (the
        call's type arguments bound)."""
        check_arity(loc, decl.name, decl.params, len(args))
        env = _type_params(decl)
        env.update((tp, self.resolve(ta)) for tp, ta in zip(env, type_args))
        for p, a in _pairs(decl.params, arg_asts, args):
            self.compatible_arg(self.resolve(p.type, env), a, p.name, decl.name,
                                p.direction)

    def extern_method(self, e, ext, name, args):
        """The method of extern type `ext` a call with `args` selects (arity, then types)."""
        methods = [m for m in ext.decl.methods if m.name == name]
        if not methods:
            raise CompileError(name_loc(e.func), f"extern {ext.name} has no method '{name}'")
        m = self.overload(e, methods, name, args, dict(zip(ext.decl.type_params, ext.type_args)))
        if ext.name == "packet_in" and name == "extract":
            self.check_extract(e, args)
        if ext.name == "packet_in" and name == "lookahead" and len(e.type_args) != 1:
            raise CompileError(e.loc, "lookahead needs one type argument and no arguments")
        return m

    def check_extract(self, e, args):
        """`extract` takes a header; a second argument, the length in bits of its varbit
        field, exactly when it has one."""
        t = args[0].type
        if t is UNKNOWN:
            return
        if not (isinstance(t, StructT) and t.kind == "header"):
            raise CompileError(e.args[0].loc, f"extract needs a header, not {t}")
        has_varbit = any(isinstance(ft, VarbitT) for _, ft in t.fields)
        if has_varbit != (len(args) == 2):
            raise CompileError(e.loc, "extract of a header with a varbit field needs its "
                                      "length in bits as second argument" if has_varbit else
                                      "two-argument extract needs a header with a varbit field")

    def overload(self, e, methods, name, args, env):
        """The one of `methods` (an extern method's or function's overloads) a call with
        `args` selects (arity, then types; `env` binds the instance's type parameters)."""
        fitting = [m for m in methods if min_args(m) <= len(args) <= len(m.params)]
        if not fitting:
            counts = sorted({len(m.params) for m in methods})
            raise CompileError(e.loc, f"wrong number of arguments to '{name}': expected "
                                      f"{' or '.join(map(str, counts))}, got {len(args)}")
        m = fitting[0]
        env = self.bound_type_params(m, args, env, getattr(e, "type_args", None) or [])
        for p, a in _pairs(m.params, getattr(e, "args", None), args):
            self.compatible_arg(self.method_type(p.type, m, env), a, p.name, name,
                                p.direction)
        return m

    def method_type(self, tr, method, env):
        """A method's parameter/return type with the instance's type arguments bound."""
        if tr.name in env:
            return env[tr.name]
        if tr.name in method.type_params or tr.name == "_" or tr.args:
            return UNKNOWN
        return self.resolve(tr)

    def e_Cast(self, e):
        operand = self.expr(e.expr)
        t = self.resolve(e.type)
        if not _untracked(operand.type) and not isinstance(t, TypeVar):
            check_cast(operand.type, t, e.loc)
        return ir.Cast(e.loc, t, operand)

    def e_Slice(self, e):
        """`base[hi:lo]` of a bit<W> or int<W> value, with compile-time bounds in range."""
        base = self.expr(e.expr)
        t = base.type
        if not _untracked(t) and not isinstance(t, Bits):
            raise CompileError(e.loc, f"cannot slice a value of type {t}")
        hi = self.const_int(e.hi, "slice bound")
        lo = self.const_int(e.lo, "slice bound")
        if isinstance(t, Bits) and not 0 <= lo <= hi < t.width:
            raise CompileError(e.loc, f"slice [{hi}:{lo}] out of range for {t}")
        return ir.Slice(e.loc, Bits(hi - lo + 1), base, hi, lo)

    def e_Unary(self, e):
        if e.op == "!":
            return ir.Unary(e.loc, BoolT(), e.op, self.expect_bool(e.expr, "operand of '!'"))
        operand = self.expr(e.expr)
        if not _untracked(operand.type) and not isinstance(operand.type, (Bits, IntT)):
            raise CompileError(e.loc, f"operator '{e.op}' cannot be applied to {operand.type}")
        return ir.Unary(e.loc, operand.type, e.op, operand)

    def e_Binary(self, e):
        if e.op in ("&&", "||"):
            left = self.expect_bool(e.left, f"left operand of '{e.op}'")
            right = self.expect_bool(e.right, f"right operand of '{e.op}'")
            return ir.Binary(e.loc, BoolT(), e.op, left, right)
        left, right = self.expr(e.left), self.expr(e.right)
        if e.op in ("<<", ">>"):
            return ir.Binary(e.loc, self.shift_type(e, left, right), e.op, left, right)
        return ir.Binary(e.loc, self.binary_type(e, left.type, right.type), e.op, left, right)

    def shift_type(self, e, left, right):
        """A shift's type, its left operand's: bit<W>, int<W> or an integer without a width
        (then shifted by a compile-time amount); the amount is unsigned."""
        lt, rt = left.type, right.type
        if not _untracked(lt) and not isinstance(lt, (Bits, IntT)):
            raise CompileError(e.left.loc, f"cannot shift a value of type {lt}")
        if not _untracked(rt) and (not isinstance(rt, (Bits, IntT)) or
                                   isinstance(rt, Bits) and rt.signed):
            raise CompileError(e.right.loc, f"shift amount must be unsigned, not {rt}")
        if isinstance(lt, IntT) and right.value is None:
            raise CompileError(e.left.loc, "the left operand of a shift by a run-time amount "
                                           "needs a width")
        return lt

    def binary_type(self, e, lt, rt):
        if e.op == "++":
            for t, operand in ((lt, e.left), (rt, e.right)):
                if not _untracked(t) and not isinstance(t, Bits):
                    raise CompileError(operand.loc, f"operands of '++' need a width, not {t}")
            return Bits(lt.width + rt.width, lt.signed) if isinstance(lt, Bits) and \
                isinstance(rt, Bits) else UNKNOWN
        if _untracked(lt) or _untracked(rt):
            return BoolT() if e.op in COMPARISONS else UNKNOWN
        if e.op in COMPARISONS:
            self.check_comparison(e, lt, rt)
            return BoolT()
        t = self.unified(e, lt, rt)
        if e.op in ("|+|", "|-|") and not isinstance(t, Bits):
            raise CompileError(e.loc, f"saturating '{e.op}' needs operands with a width")
        return t

    def unified(self, e, lt, rt):
        """The one type of an arithmetic or comparison operator's operands: bit<W>, int<W>
        or an integer without a width (a serializable enum when compared), which takes the
        other operand's type."""
        for t in (lt, rt):
            if not isinstance(t, (Bits, IntT)) and not (isinstance(t, EnumT) and t.base and
                                                        e.op in COMPARISONS):
                raise CompileError(e.loc, f"operator '{e.op}' cannot be applied to {t}")
        if isinstance(lt, IntT) or lt == rt:
            return rt
        if isinstance(rt, IntT):
            return lt
        raise CompileError(e.loc, f"operands of '{e.op}' have different types: {lt} and {rt}")

    def check_comparison(self, e, lt, rt):
        """bool, enum, error, varbit, header, struct and stack values compare with `==` and
        `!=` only, and with their own type (a serializable enum with its integers, with any
        operator)."""
        ordered = e.op not in ("==", "!=")
        if isinstance(lt, BoolT) or isinstance(rt, BoolT):
            ok = isinstance(lt, BoolT) and isinstance(rt, BoolT) and not ordered
        elif isinstance(lt, (EnumT, ErrorT)) or isinstance(rt, (EnumT, ErrorT)):
            serializable = isinstance(lt, EnumT) and lt.base is not None
            ok = (same_type(lt, rt) or serializable and isinstance(rt, IntT)) and \
                (not ordered or serializable)
        elif isinstance(lt, VarbitT) or isinstance(rt, VarbitT):
            ok = not ordered and lt == rt
        elif isinstance(lt, (StructT, StackT)) or isinstance(rt, (StructT, StackT)):
            ok = not ordered and same_type(lt, rt)
        else:
            self.unified(e, lt, rt)
            return
        if not ok:
            raise CompileError(e.right.loc, f"cannot compare {lt} with {rt} using '{e.op}'")

    def e_Ternary(self, e):
        cond = self.expect_bool(e.cond, "condition of '?:'")
        a, b = self.expr(e.then), self.expr(e.other)
        t = a.type if not isinstance(a.type, IntT) else b.type
        self.compatible(t, a.type, e.then.loc, "'?:'")
        self.compatible(t, b.type, e.other.loc, "'?:'")
        return ir.Ternary(e.loc, t, cond, a, b)

    def e_Index(self, e):
        """A stack element (a compile-time index in bounds) or a tuple item (the index is a
        compile-time constant in bounds), typed."""
        base = self.expr(e.expr)
        t = base.type
        if not _untracked(t) and not isinstance(t, (StackT, TupleT)):
            raise CompileError(e.loc, f"cannot index a value of type {t}")
        index = self.expr(e.index)
        if isinstance(t, TupleT):
            i = self.const_int(e.index, "tuple index") if index.value is None else index.value
            if not 0 <= i < len(t.elems):
                raise CompileError(e.index.loc, f"index {i} out of bounds for {t}")
        elif isinstance(t, StackT) and index.value is not None and \
                not 0 <= int(index.value) < t.size:
            raise CompileError(e.index.loc, f"index {int(index.value)} out of bounds for stack "
                                            f"of size {t.size}")
        item = t.elem if isinstance(t, StackT) else t.elems[i] if isinstance(t, TupleT) else \
            UNKNOWN
        return ir.Untyped(e.loc, item, [base, index], "Index")

    def e_DefaultExpr(self, e):
        """`_` (a don't-care argument, a keyset or key that matches anything) or `default`."""
        return ir.Untyped(e.loc, DontCareT(), [], "DefaultExpr")

    def e_ListExpr(self, e):
        items = [self.expr(x) for x in e.items]
        return ir.ListExpr(e.loc, TupleT([x.type for x in items]), items)


def check_parameters(program):
    """No parameter list of a parser, control, package, action or function (top-level, or
    an action or function inside a block) names a parameter twice."""
    for d in program.decls:
        if not isinstance(d, (A.ParserDecl, A.ControlDecl, A.PackageDecl, A.ActionDecl,
                              A.FunctionDecl)):
            continue
        for params in [d.params] + [local.params for local in getattr(d, "locals", [])
                                    if isinstance(local, (A.ActionDecl, A.FunctionDecl))]:
            seen = set()
            for p in params:
                if p.name in seen:
                    raise CompileError(p.loc, f"duplicate parameter '{p.name}'")
                seen.add(p.name)


class _LoopFolder:
    """Unroller's compile-time questions (`const_int`, `const_value`, `resolve_type`)
    answered by a BlockChecker in its scopes of the moment, with the loop variables the
    unroller binds (a `symbols.Scope` chain of constant `Val`s) innermost. Nothing it
    checks is recorded."""

    def __init__(self, checker):
        self.checker = checker

    def answer(self, scope, question):
        c = self.checker
        names, chain = {}, []
        while scope is not None:
            chain.append(scope)
            scope = scope.parent
        for sc in reversed(chain):
            names.update(sc.names)
        saved = c.program_nodes, c.nodes
        c.program_nodes = c.nodes = None
        c.scopes.append(names)
        try:
            return question()
        finally:
            c.scopes.pop()
            c.program_nodes, c.nodes = saved

    def const_int(self, e, scope, what):
        return self.answer(scope, lambda: self.checker.const_int(self.settled(e), what))

    def const_value(self, e, scope, t=None, what="constant"):
        def question():
            node = self.checker.expr(self.settled(e))
            return node.value if t is None or node.value is None else \
                convert(node.value, node.type, t, e.loc, what)
        return self.answer(scope, question)

    def settled(self, e):
        """`e`, when its value is settled here (`ir.settled`); a value that is not (a
        division in the branch `?:` does not take) may raise an error in the emitter's
        scope, which knows more constants: the loop is left to the emitter."""
        node = self.checker.expr(e)
        if node.value is not None and not ir.settled(node):
            raise CompileError(e.loc, "left to the emitter's scope")
        return e

    def resolve_type(self, tr, scope):
        return self.checker.resolve(tr)


def check_functions(comp, program, externs, program_nodes=None, unrolled=None):
    """The top-level actions and functions, in declaration order: name -> ir.Action /
    ir.Function (each sees those declared before it)."""
    top = {}
    for d in program.decls:
        if isinstance(d, (A.ActionDecl, A.FunctionDecl)):
            kind = ir.Action if isinstance(d, A.ActionDecl) else ir.Function
            checker = BlockChecker(comp, None, externs, top)
            checker.program_nodes, checker.unrolled = program_nodes, unrolled
            top[d.name] = checker.function_body(d, kind)
    return top


def check_v1model(comp, program):
    """The v1model checker phase, after the declarations: the top-level actions and
    functions, then every parser and control with a body, in declaration order. Returns
    the program's expression nodes, id(AST expression) -> (it, its IR node or None),
    `record`'s table: the BMv2 emitter reads a node's type and value from it where the
    passes left the expression as it was checked; and the loops whose iterations the
    checker's scopes decide, id(loop) -> (it, an A.Block of its iterations): `unroll`,
    for `unroll.replace_loops` (README.md, "Architecture: phases")."""
    check_parameters(program)
    program_nodes, unrolled = {}, {}
    top = check_functions(comp, program, {}, program_nodes, unrolled)
    for d in program.decls:
        if isinstance(d, A.ControlDecl) and d.body is not None or \
                isinstance(d, A.ParserDecl) and d.states:
            checker = BlockChecker(comp, d, {}, top)
            checker.program_nodes, checker.unrolled = program_nodes, unrolled
            checker.block()
    return program_nodes, unrolled


def record(program_nodes, e, node):
    """Keep `node` as AST expression `e`'s node of the program. An expression checked more
    than once (a sub-block's body, once as declared and once per instance) keeps it only
    while every check gives the same type, value, index value and slice bounds (None
    otherwise: the emitter checks it again in its own scope). A generic function's body,
    checked again with each call's types, is not recorded (`expr`)."""
    old = program_nodes.get(id(e))
    if old is None:
        program_nodes[id(e)] = (e, node)
    elif old[1] is not None and _node_key(old[1]) != _node_key(node):
        program_nodes[id(e)] = (e, None)


def _node_key(n):
    index = n.parts[1].value if isinstance(n, ir.Untyped) and n.form == "Index" else None
    return (str(n.type), type(n.type), n.value, index, getattr(n, "hi", None),
            getattr(n, "lo", None))


def _type_of_decl(decl):
    """The type a name has as an expression: a variable's or instance's, a constant's, the
    type a type name names (for `E.member`); actions, tables and blocks have none."""
    if isinstance(decl, (ir.Variable, ir.Instance, ExternInstance)):
        return decl.type
    if isinstance(decl, Val):
        return decl.type
    if isinstance(decl, TypeSym):
        return decl.type
    return UNKNOWN


def convert(value, src, t, loc, what):
    """A value of type `src` implicitly converted to type `t` (P4-16 8.11.2: only an
    integer without a width converts, to bit<W>/int<W> or a serializable enum); a type
    mismatch otherwise (the checker's rule for assignments, arguments, `?:` and returns,
    `BlockChecker.compatible`)."""
    if t is None or isinstance(t, (TypeVar, DontCareT)):
        return value
    if isinstance(src, IntT) and isinstance(t, Bits):
        return None if value is None else wrap(value, t)
    if isinstance(src, IntT) and (isinstance(t, IntT) or isinstance(t, EnumT) and t.base):
        return value
    if isinstance(src, TupleT) and isinstance(t, StructT) or \
            isinstance(t, StructT) and isinstance(src, StructT) and t.name == src.name:
        return value
    if src is None or not same_type(src, t):
        raise CompileError(loc, f"type mismatch in {what}: expected {t}, got "
                                f"{src if src is not None else 'a non-value'}")
    return value


def check_cast(src, t, loc):
    """`(t) x` for an `x` of type `src`: bool from bit<1> or an integer without a width;
    bit<W>/int<W> from bool (bit<1> only), bit<>, int<> or a serializable enum; a
    serializable enum from bit<>, int<>; any type from itself."""
    if isinstance(t, BoolT):
        ok = isinstance(src, (BoolT, IntT)) or isinstance(src, Bits) and src.width == 1
    elif isinstance(t, Bits) and isinstance(src, BoolT):
        if t.width != 1:
            raise CompileError(loc, f"cannot cast bool to {t}")
        ok = True
    elif isinstance(t, Bits):
        ok = isinstance(src, (Bits, IntT)) or isinstance(src, EnumT) and src.base is not None
    elif isinstance(t, EnumT) and t.base:
        ok = isinstance(src, (Bits, IntT)) or same_type(src, t)
    else:
        ok = same_type(src, t)
    if not ok:
        raise CompileError(loc, f"cannot cast {src} to {t}")


def _cast_value(v, src, t):
    """A constant cast to `t` (casts the emitter does not refuse)."""
    if v is None:
        return None
    if isinstance(t, BoolT):
        return bool(v)
    if isinstance(t, Bits):
        return int(v) if isinstance(src, BoolT) else wrap(int(v), t)
    return v


def _applies_table(node):
    """`t.apply()`."""
    return isinstance(node, ir.Call) and isinstance(node.func, ir.Member) and \
        isinstance(getattr(node.func.base, "decl", None), ir.Table) and node.func.name == "apply"


def _is_action_run(node):
    """`t.apply().action_run`."""
    return isinstance(node, ir.Member) and node.name == "action_run" and \
        _applies_table(node.base)


def _unique_names(decls):
    """A block's parameters and local declarations (actions, tables, variables,
    instances...) share one namespace."""
    seen = set()
    for d in decls:
        if d.name in seen:
            raise CompileError(d.loc, f"duplicate declaration of '{d.name}'")
        seen.add(d.name)


def _untracked(t):
    """A type the operator rules skip: untracked, or a generic function's type parameter
    (its body is checked once, unspecialized)."""
    return t is UNKNOWN or isinstance(t, TypeVar)


def _is_value_set(node):
    return isinstance(node, ir.Ref) and (isinstance(node.decl, ValueSetSym) or isinstance(
        node.decl, ir.Variable) and node.decl.kind == "value_set")


def _keyset_value(e, node, width):
    """A select keyset value: a compile-time integer that fits the key's `width` bits (a
    negative one is taken modulo 2^width)."""
    if node.value is None:
        raise CompileError(e.loc, "select case values must be compile-time constants")
    value = int(node.value)
    if value < 0 and width is not None:
        value &= mask_of(width)
    if width is not None and value > mask_of(width):
        raise CompileError(e.loc, f"value {value} does not fit the {width}-bit select key")
    return value


def _pairs(params, arg_asts, args):
    """(parameter, argument) pairs of a call: by name when its arguments are named
    (`arg_asts`, the call's AST arguments), else in order."""
    if arg_asts and any(isinstance(a, A.NamedArg) for a in arg_asts):
        by_name = {a.name: n for a, n in zip(arg_asts, args) if isinstance(a, A.NamedArg)}
        return [(p, by_name[p.name]) for p in params if p.name in by_name]
    return list(zip(params, args))


def _arg_value(a):
    """A call argument's expression (a named argument's value)."""
    return a.value if isinstance(a, A.NamedArg) else a


def _type_params(decl):
    """A generic function's type parameters, unbound (actions have none)."""
    return {t: TypeVar(t) for t in getattr(decl, "type_params", [])}


def min_args(method):
    """The arguments a method needs: its parameters without a default or `@optional`."""
    return sum(1 for p in method.params
               if p.default is None and not any(a.name == "optional" for a in p.annos))


def check_arity(loc, name, params, count):
    """`count` arguments for the parameters `params`: at least those without a default, at
    most all of them."""
    need = sum(1 for p in params if p.default is None)
    check_count(loc, name, count, need, len(params))


def check_count(loc, name, count, need, most):
    if not need <= count <= most:
        raise CompileError(loc, f"wrong number of arguments to '{name}': expected {need}, "
                                f"got {count}")


def _children(e):
    for v in vars(e).values():
        if isinstance(v, A.Expr):
            yield v
        elif isinstance(v, list):
            yield from (x for x in v if isinstance(x, A.Expr))

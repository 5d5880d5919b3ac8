"""Recursive-descent parser for P4-16 (the language as v1model programs use it).

Type names are tracked while parsing (typedefs, headers, structs, enums, externs,
parsers, controls, type parameters) so `T x;` declarations, `(T) e` casts and
`f<T>(...)` calls are told apart from expressions without backtracking chains.
"""
from . import ast as A
from .errors import CompileError
from .lexer import CONTEXTUAL, tokenize

_BUILTIN_TYPES = {"bit", "int", "varbit", "bool", "error", "string", "void", "match_kind"}
_COMPOUND = {"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", "|+|=", "|-|="}
_BINARY_PREC = [
    ["||"], ["&&"], ["==", "!="], ["<", ">", "<=", ">="], ["|"], ["^"], ["&"],
    ["<<", ">>"], ["++", "+", "-", "|+|", "|-|"], ["*", "/", "%"],
]


class Parser:
    def __init__(self, tokens):
        self.toks = tokens
        self.pos = 0
        self.type_names = set()
        self.type_param_scopes = []

    # ------------------------------------------------------------ token helpers
    @property
    def tok(self):
        return self.toks[self.pos]

    def peek(self, n=1):
        return self.toks[min(self.pos + n, len(self.toks) - 1)]

    def at(self, text, n=0):
        t = self.peek(n) if n else self.tok
        return t.kind in ("op", "kw") and t.text == text

    def advance(self):
        t = self.tok
        if t.kind != "eof":
            self.pos += 1
        return t

    def accept(self, text):
        if self.at(text):
            return self.advance()
        return None

    def expect(self, text, what=None):
        if self.at(text):
            return self.advance()
        raise self.error(f"expected '{text}'" + (f" {what}" if what else ""))

    def error(self, message, tok=None):
        t = tok or self.tok
        found = "end of file" if t.kind == "eof" else f"'{t.text}'"
        return CompileError(t.loc, f"syntax error: {message}, found {found}")

    def is_ident(self, n=0):
        t = self.peek(n) if n else self.tok
        return t.kind == "id" or (t.kind == "kw" and t.text in CONTEXTUAL)

    def ident(self, what="identifier"):
        if self.is_ident():
            return self.advance().text
        raise self.error(f"expected {what}")

    def is_type_name(self, name):
        if name in self.type_names:
            return True
        return any(name in s for s in self.type_param_scopes)

    def at_type_start(self, n=0):
        t = self.peek(n) if n else self.tok
        if t.kind == "kw" and t.text in ("bit", "int", "varbit", "bool", "error", "string",
                                           "void", "tuple", "match_kind"):
            return True
        if t.kind == "op" and t.text == "." and self.peek(n + 1).kind == "id":
            return self.is_type_name(self.peek(n + 1).text)
        return t.kind == "id" and self.is_type_name(t.text)

    # ------------------------------------------------------------ program
    def parse_program(self):
        decls = []
        while self.tok.kind != "eof":
            if self.accept(";"):
                continue
            decls.append(self.declaration())
        return A.Program(decls)

    def annotations(self):
        annos = []
        while self.at("@"):
            at = self.advance()
            name = self.advance().text
            args = []
            if self.at("(") and self.tok.glued:
                args = self.annotation_body(")")
            elif self.at("["):
                args = self.annotation_body("]")
            annos.append(A.Annotation(at.loc, name, args))
        return annos

    def annotation_body(self, close):
        """Keep simple expressions (strings, ints, names); other tokens stay raw text."""
        self.advance()
        start, depth = self.pos, 1
        while depth:
            if self.tok.kind == "eof":
                raise self.error(f"unterminated annotation, expected '{close}'")
            if self.tok.text in "([{":
                depth += 1
            elif self.tok.text in ")]}":
                depth -= 1
            self.advance()
        body = self.toks[start:self.pos - 1]
        return _annotation_args(body)

    def declaration(self):
        annos = self.annotations()
        t = self.tok
        if t.kind == "kw":
            handler = {
                "const": self.const_decl, "typedef": self.typedef_decl,
                "type": self.typedef_decl, "header": self.struct_decl,
                "header_union": self.struct_decl, "struct": self.struct_decl,
                "enum": self.enum_decl, "error": self.error_decl,
                "match_kind": self.match_kind_decl, "extern": self.extern_decl,
                "parser": self.parser_decl, "control": self.control_decl,
                "package": self.package_decl, "action": self.action_decl,
            }.get(t.text)
            if handler and not (t.text == "error" and not self.at("{", 1)):
                return handler(annos)
        if self.at_type_start():
            return self.typed_declaration(annos)
        if self.is_ident() and self.is_ident(1) and self.peek(2).text == "<":
            # a generic function whose return type is its own type parameter: `T f<T>(...)`
            self.type_param_scopes.append({t.text})
            decl = self.typed_declaration(annos)
            self.type_param_scopes.pop()
            return decl
        raise self.error("expected a declaration")

    def typed_declaration(self, annos):
        """Top level: instantiation `T(args) n;`, function `T f(...) {}` or constant-less var."""
        loc = self.tok.loc
        ty = self.type_ref()
        if self.at("("):
            return self.instance(loc, annos, ty)
        name = self.ident("name")
        if self.at("(") or self.at("<"):
            tps = self.type_params()
            self.type_param_scopes.append(set(tps))
            params = self.params()
            body = self.block()
            self.type_param_scopes.pop()
            return A.FunctionDecl(loc, annos, name, ty, tps, params, body)
        raise self.error("expected '(' after declaration name")

    def instance(self, loc, annos, ty):
        """The rest of an instantiation after its type: `(args) name [= {...}];`."""
        args = self.arguments()
        name = self.ident("instance name")
        initializer = self.instance_initializer()
        self.expect(";")
        return A.Instance(loc, annos, ty, args, name, initializer)

    def instance_initializer(self):
        """`= { function declarations }` after an instantiation (e.g. TNA's
        RegisterAction implementing `apply`); None when absent."""
        if not self.accept("="):
            return None
        self.expect("{")
        methods = []
        while not self.accept("}"):
            d = self.declaration()
            if not isinstance(d, (A.FunctionDecl, A.Instance)):
                raise CompileError(d.loc, "an instance initializer holds only method "
                                          "implementations and instances")
            methods.append(d)
        return methods

    def const_decl(self, annos):
        self.expect("const")
        ty = self.type_ref()
        loc = self.tok.loc
        name = self.ident("constant name")
        self.expect("=")
        value = self.expression()
        self.expect(";")
        return A.ConstDecl(loc, annos, name, ty, value)

    def typedef_decl(self, annos):
        kw = self.advance()
        ty = self.type_ref() if not self.at_struct_kw() else self.inline_struct(annos)
        loc = self.tok.loc
        name = self.ident("type name")
        self.expect(";")
        self.type_names.add(name)
        return A.Typedef(loc, annos, name, ty, kw.text == "type")

    def at_struct_kw(self):
        return self.tok.kind == "kw" and self.tok.text in ("header", "struct", "header_union")

    def inline_struct(self, annos):
        raise CompileError(self.tok.loc, "unsupported construct: typedef of an inline struct")

    def struct_decl(self, annos):
        kw = self.advance()
        loc = self.tok.loc
        name = self.ident(f"{kw.text} name")
        self.type_names.add(name)
        self.expect("{")
        fields = []
        while not self.accept("}"):
            f_annos = self.annotations()
            ty = self.type_ref()
            floc = self.tok.loc
            fname = self.ident("field name")
            self.expect(";")
            fields.append(A.StructField(floc, f_annos, ty, fname))
        return A.StructLike(loc, annos, name, kw.text, fields)

    def enum_decl(self, annos):
        loc = self.expect("enum").loc
        base = None
        if not self.is_ident() or self.at("<", 1):
            base = self.type_ref()
        name = self.ident("enum name")
        self.type_names.add(name)
        self.expect("{")
        members = []
        while not self.accept("}"):
            mloc = self.tok.loc
            mname = self.ident("enum member")
            value = self.expression() if self.accept("=") else None
            members.append((mloc, mname, value))
            if not self.accept(","):
                self.expect("}")
                break
        return A.EnumDecl(loc, annos, name, base, members)

    def name_list_decl(self):
        loc = self.advance().loc
        self.expect("{")
        members = []
        while not self.accept("}"):
            members.append((self.tok.loc, self.ident()))
            if not self.accept(","):
                self.expect("}")
                break
        return loc, members

    def error_decl(self, annos):
        loc, members = self.name_list_decl()
        return A.ErrorDecl(loc, annos, "error", members)

    def match_kind_decl(self, annos):
        loc, members = self.name_list_decl()
        return A.MatchKindDecl(loc, annos, "match_kind", members)

    def type_params(self):
        tps = []
        if self.accept("<"):
            while True:
                tps.append(self.ident("type parameter"))
                if not self.accept(","):
                    break
            self.expect(">")
        return tps

    def extern_decl(self, annos):
        loc = self.expect("extern").loc
        if self.is_ident() and (self.at("{", 1) or self.at("<", 1) and not self.at("(", 2)):
            if self.at("{", 1) or self._extern_object_ahead():
                return self.extern_object(loc, annos)
        m_annos = annos
        method = self.method_decl(m_annos)
        return A.ExternFunc(loc, annos, method.name, method)

    def _extern_object_ahead(self):
        """`extern Name<T> {` (object) versus `extern T fn<...>(` (function)."""
        depth, i = 0, 1
        while True:
            t = self.peek(i)
            if t.kind == "eof":
                return False
            if t.text == "<":
                depth += 1
            elif t.text == ">":
                depth -= 1
                if depth == 0:
                    return self.peek(i + 1).text == "{"
            i += 1

    def extern_object(self, loc, annos):
        name = self.ident("extern name")
        self.type_names.add(name)
        tps = self.type_params()
        self.type_param_scopes.append(set(tps))
        self.expect("{")
        methods = []
        while not self.accept("}"):
            m_annos = self.annotations()
            abstract = self.tok.text == "abstract"
            if abstract:
                self.advance()
            if self.tok.text == name and self.at("(", 1):
                mloc = self.advance().loc
                params = self.params()
                self.expect(";")
                methods.append(A.Method(mloc, m_annos, None, name, [], params))
            else:
                m = self.method_decl(m_annos)
                m.abstract = abstract
                methods.append(m)
        self.type_param_scopes.pop()
        return A.ExternDecl(loc, annos, name, tps, methods)

    def method_decl(self, annos):
        loc = self.tok.loc
        # generic return types (e.g. `T lookahead<T>()`) may name a parameter not yet seen
        ret_name = self.tok.text
        self.type_param_scopes.append({ret_name} if self.is_ident() else set())
        ret = self.type_ref()
        name = self.ident("method name")
        tps = self.type_params()
        self.type_param_scopes.append(set(tps))
        params = self.params()
        self.type_param_scopes.pop()
        self.type_param_scopes.pop()
        self.expect(";")
        return A.Method(loc, annos, ret, name, tps, params)

    def params(self):
        self.expect("(")
        params = []
        while not self.accept(")"):
            p_annos = self.annotations()
            loc = self.tok.loc
            direction = ""
            if self.tok.kind == "kw" and self.tok.text in ("in", "out", "inout"):
                direction = self.advance().text
            ty = self.type_ref()
            loc = self.tok.loc
            name = self.ident("parameter name")
            default = self.expression() if self.accept("=") else None
            params.append(A.Param(loc, p_annos, direction, ty, name, default))
            if not self.accept(","):
                self.expect(")")
                break
        return params

    def block_type_head(self, keyword):
        """`parser|control Name<T...>(params)`: declares the type name and opens a
        type-parameter scope that the caller closes."""
        self.expect(keyword)
        loc = self.tok.loc
        name = self.ident(f"{keyword} name")
        self.type_names.add(name)
        tps = self.type_params()
        self.type_param_scopes.append(set(tps))
        return loc, name, tps, self.params()

    def parser_decl(self, annos):
        loc, name, tps, params = self.block_type_head("parser")
        if self.accept(";"):
            self.type_param_scopes.pop()
            return A.ParserDecl(loc, annos, name, tps, params, None, [], [])
        ctor = self.params() if self.at("(") else None
        self.expect("{")
        local_decls, states = [], []
        while not self.accept("}"):
            s_annos = self.annotations()
            if self.at("state"):
                states.append(self.parser_state(s_annos))
            else:
                local_decls.append(self.local_declaration(s_annos))
        self.type_param_scopes.pop()
        return A.ParserDecl(loc, annos, name, tps, params, ctor, local_decls, states)

    def parser_state(self, annos):
        self.expect("state")
        loc = self.tok.loc
        name = self.ident("state name")
        self.expect("{")
        stmts, transition = [], None
        while not self.accept("}"):
            if self.at("transition"):
                transition = self.transition()
                self.expect("}", "after the transition statement")
                break
            stmts.append(self.statement())
        return A.ParserState(loc, annos, name, stmts, transition)

    def transition(self):
        loc = self.expect("transition").loc
        if self.accept("select"):
            self.expect("(")
            keys = self.expression_list(")")
            self.expect("{")
            cases = []
            while not self.accept("}"):
                self.annotations()
                cloc = self.tok.loc
                ks = self.keyset()
                self.expect(":")
                name_loc = self.tok.loc
                cases.append((cloc, ks, self.ident("state name"), name_loc))
                self.expect(";")
            return A.Transition(loc, None, keys, cases)
        target_loc = self.tok.loc
        target = self.ident("state name")
        self.expect(";")
        tr = A.Transition(loc, target)
        tr.next_loc = target_loc
        return tr

    def keyset(self):
        if self.at("(") and not self.at_cast():
            loc = self.advance().loc
            items = self.keyset_list(")")
            return A.ListExpr(loc, items) if len(items) != 1 else items[0]
        return self.simple_keyset()

    def keyset_list(self, close):
        return self.comma_list(self.simple_keyset, close)

    def simple_keyset(self):
        t = self.tok
        if self.accept("default") or (t.kind == "id" and t.text == "_" and self.advance()):
            return A.DefaultExpr(t.loc)
        e = self.expression()
        if self.accept("&&&"):
            return A.Mask(t.loc, e, self.expression())
        if self.accept(".."):
            return A.Range(t.loc, e, self.expression())
        return e

    def control_decl(self, annos):
        loc, name, tps, params = self.block_type_head("control")
        if self.accept(";"):
            self.type_param_scopes.pop()
            return A.ControlDecl(loc, annos, name, tps, params, None, [], None)
        ctor = self.params() if self.at("(") else None
        self.expect("{")
        local_decls, body = [], None
        while not self.accept("}"):
            l_annos = self.annotations()
            if self.at("apply") and self.at("{", 1):
                self.advance()
                body = self.block()
            else:
                local_decls.append(self.local_declaration(l_annos))
        self.type_param_scopes.pop()
        if body is None:
            raise CompileError(loc, f"control '{name}' has no apply block")
        return A.ControlDecl(loc, annos, name, tps, params, ctor, local_decls, body)

    def local_declaration(self, annos):
        if self.at("action"):
            return self.action_decl(annos)
        if self.at("table"):
            return self.table_decl(annos)
        if self.at("const"):
            return self.const_decl(annos)
        if self.at("value_set"):
            return self.value_set_decl(annos)
        if self.at_type_start():
            return self.var_or_instance(annos)
        self.check_unknown_type(instance_ok=True)
        raise self.error("expected a local declaration (action, table, constant, variable or "
                         "instance)")

    def value_set_decl(self, annos):
        loc = self.expect("value_set").loc
        self.expect("<")
        ty = self.type_ref()
        self.expect_close_angle()
        self.expect("(")
        size = self.expression()
        self.expect(")")
        name = self.ident("value set name")
        self.expect(";")
        return A.ValueSetDecl(loc, annos, name, ty, size)

    def package_decl(self, annos):
        loc = self.expect("package").loc
        name = self.ident("package name")
        self.type_names.add(name)
        tps = self.type_params()
        self.type_param_scopes.append(set(tps))
        params = self.params()
        self.type_param_scopes.pop()
        self.expect(";")
        return A.PackageDecl(loc, annos, name, tps, params)

    def action_decl(self, annos):
        self.expect("action")
        loc = self.tok.loc
        name = self.ident("action name")
        params = self.params()
        body = self.block()
        return A.ActionDecl(loc, annos, name, params, body)

    # ------------------------------------------------------------ tables
    def table_decl(self, annos):
        self.expect("table")
        loc = self.tok.loc
        name = self.ident("table name")
        if self.accept("("):                   # `table t() {`: older p4c samples
            self.expect(")")
        self.expect("{")
        props = []
        while not self.accept("}"):
            props.append(self.table_property())
        return A.TableDecl(loc, annos, name, props)

    def table_property(self):
        annos = self.annotations()
        is_const = bool(self.accept("const"))
        loc = self.tok.loc
        pname = self.ident("table property")
        self.expect("=")
        if pname == "key":
            value = self.brace_list(self.key_element)
        elif pname == "actions":
            value = self.brace_list(self.action_ref_item)
        elif pname == "entries":
            value = self.brace_list(self.table_entry)
        else:
            value = self.expression()
            self.expect(";")
        return A.TableProperty(loc, annos, pname, is_const, value)

    def brace_list(self, item):
        self.expect("{")
        items = []
        while not self.accept("}"):
            items.append(item())
        self.accept(";")
        return items

    def key_element(self):
        loc = self.tok.loc
        e = self.expression()
        self.expect(":")
        mloc = self.tok.loc
        kind = self.ident("match kind")
        annos = self.annotations()
        self.expect(";")
        return A.KeyElement(loc, annos, e, kind, mloc)

    def action_ref(self, annos):
        loc = self.tok.loc
        absolute = bool(self.accept("."))
        name = A.Name(loc, self.ident("action name"), absolute)
        args = self.arguments() if self.at("(") else None
        return A.ActionRef(loc, annos, name, args)

    def action_ref_item(self):
        ref = self.action_ref(self.annotations())
        self.expect(";")
        return ref

    def table_entry(self):
        annos = self.annotations()
        loc = self.tok.loc
        priority = None
        if self.at("priority") and self.at("=", 1):
            self.advance()
            self.advance()
            priority = self.expression()
            self.expect(":")
        ks = self.keyset()
        keys = ks.items if isinstance(ks, A.ListExpr) else [ks]
        self.expect(":")
        action = self.action_ref(self.annotations())
        annos = annos + self.annotations()  # P4: `keyset : action @anno;` annotates the entry
        self.expect(";")
        return A.TableEntry(loc, annos, keys, action, priority)

    # ------------------------------------------------------------ types
    def type_ref(self):
        loc = self.tok.loc
        t = self.tok
        if t.kind == "kw" and t.text in ("bit", "int", "varbit"):
            self.advance()
            width = None
            if self.at("<") and self.tok.glued or self.at("<"):
                self.advance()
                width = self.width_expr()
                self.expect_close_angle()
            elif t.text == "bit":
                width = A.IntLit(loc, 1)
            elif t.text == "varbit":
                raise self.error("expected '<' after varbit")
            ty = A.TypeRef(loc, t.text, width)
        elif t.kind == "kw" and t.text in ("bool", "error", "string", "void", "match_kind"):
            self.advance()
            ty = A.TypeRef(loc, t.text)
        elif t.kind == "kw" and t.text == "tuple":
            self.advance()
            ty = A.TypeRef(loc, "tuple", None, self.type_args())
        elif self.is_ident() or self.at("."):
            self.accept(".")
            name = self.ident("type name")
            args = self.type_args() if self.at("<") else []
            ty = A.TypeRef(loc, name, None, args)
        else:
            raise self.error("expected a type")
        if self.at("[") and not self.at("]", 1):
            self.advance()
            size = self.expression()
            self.expect("]")
            ty = A.TypeRef(loc, "stack", None, [], size, ty)
        return ty

    def width_expr(self):
        if self.at("("):
            self.advance()
            e = self.expression()
            self.expect(")")
            return e
        t = self.tok
        if t.kind == "num":
            self.advance()
            return A.IntLit(t.loc, t.value[0], t.value[1], t.value[2])
        if self.is_ident():
            self.advance()
            return A.Name(t.loc, t.text)
        raise self.error("expected a width")

    def type_args(self):
        self.expect("<")
        args = []
        while True:
            args.append(self.type_ref())
            if not self.accept(","):
                break
        self.expect_close_angle()
        return args

    def expect_close_angle(self):
        self.expect(">")

    # ------------------------------------------------------------ statements
    def block(self):
        loc = self.expect("{").loc
        stmts = []
        while not self.accept("}"):
            if self.tok.kind == "eof":
                raise self.error("expected '}'")
            stmts.append(self.statement())
        return A.Block(loc, stmts)

    def statement(self):
        annos = self.annotations()
        t = self.tok
        if self.at("{"):
            return self.block()
        if t.kind == "kw":
            if t.text == "if":
                return self.if_stmt()
            if t.text == "switch":
                return self.switch_stmt()
            if t.text == "for":
                return self.for_stmt()
            if t.text in ("break", "continue"):
                self.advance()
                self.expect(";")
                return A.Break(t.loc) if t.text == "break" else A.Continue(t.loc)
            if t.text == "return":
                self.advance()
                value = None if self.at(";") else self.expression()
                self.expect(";")
                return A.Return(t.loc, value)
            if t.text == "exit":
                self.advance()
                self.expect(";")
                return A.Exit(t.loc)
            if t.text == "const":
                d = self.const_decl(annos)
                return A.VarDecl(d.loc, annos, d.type, d.name, d.value, True)
            if t.text in ("action", "table"):
                raise self.error(f"{t.text} declarations are not allowed inside a block")
        if self.accept(";"):
            return A.Empty(t.loc)
        if self.at_type_start() and self.declaration_ahead():
            return self.var_or_instance(annos)
        self.check_unknown_type()
        return self.assign_or_call()

    def check_unknown_type(self, instance_ok=False):
        """`Name x` (or `Name(...) x` among a block's locals) where Name is not a type."""
        if self.tok.kind != "id" or self.is_type_name(self.tok.text):
            return
        if self.is_ident(1) or (instance_ok and (self.at("(", 1) or self.at("<", 1))):
            raise CompileError(self.tok.loc, f"undeclared type '{self.tok.text}'")

    def declaration_ahead(self):
        """A type followed by a name (or by `(`/`<...>(` for an instance) starts a declaration."""
        save = self.pos
        try:
            self.type_ref()
            return self.is_ident() or self.at("(")
        except CompileError:
            return False
        finally:
            self.pos = save

    def var_or_instance(self, annos):
        loc = self.tok.loc
        ty = self.type_ref()
        if self.at("("):
            return self.instance(loc, annos, ty)
        name_loc = self.tok.loc
        name = self.ident("variable name")
        init = self.expression() if self.accept("=") else None
        self.expect(";")
        return A.VarDecl(name_loc, annos, ty, name, init)

    def assign_or_call(self, end=";"):
        loc = self.tok.loc
        lhs = self.expression()
        op = self.compound_op()
        if op is not None or self.accept("="):
            rhs = self.expression()
            self.expect(end)
            if op is not None:                   # `a op= b` is `a = a op b` (P4-16 1.2.4)
                rhs = A.Binary(rhs.loc, op, lhs, rhs)
            return A.Assign(loc, lhs, rhs)
        if not isinstance(lhs, A.Call):
            raise self.error("expected '=' or a method call")
        self.expect(end)
        return A.CallStmt(loc, lhs)

    def compound_op(self):
        t = self.tok
        if t.kind == "op" and t.text in _COMPOUND:
            self.advance()
            return t.text[:-1]
        if self.at(">") and self.at(">=", 1) and self.peek().glued:
            self.advance()
            self.advance()
            return ">>"
        return None

    def for_stmt(self):
        """`for (init; cond; updates) S` or `for (T x in lo .. hi) S` (P4-16 1.2.4)."""
        loc = self.expect("for").loc
        self.expect("(")
        if self.for_in_ahead():
            ty = self.type_ref()
            name = self.ident("loop variable")
            self.expect("in")
            rng = self.expression()
            if self.accept(".."):
                rng = A.Range(rng.loc, rng, self.expression())
            self.expect(")")
            return A.ForIn(loc, ty, name, rng, self.statement())
        init = []
        while not self.accept(";"):
            if self.at_type_start() and self.declaration_ahead():
                ty = self.type_ref()
                name_loc = self.tok.loc
                name = self.ident("variable name")
                self.expect("=")
                init.append(A.VarDecl(name_loc, [], ty, name, self.expression()))
                if not self.accept(","):
                    self.expect(";")
                    break
            else:
                init.append(self.assign_or_call(end=";"))
                break
        cond = None if self.at(";") else self.expression()
        self.expect(";")
        updates = []
        while not self.accept(")"):
            updates.append(self.for_update())
        return A.For(loc, init, cond, updates, self.statement())

    def for_in_ahead(self):
        save = self.pos
        try:
            self.type_ref()
            self.ident("loop variable")
            return self.at("in")
        except CompileError:
            return False
        finally:
            self.pos = save

    def for_update(self):
        stmt_loc = self.tok.loc
        lhs = self.expression()
        op = self.compound_op()
        if op is None and not self.accept("="):
            if not isinstance(lhs, A.Call):
                raise self.error("expected an assignment or a call")
            stmt = A.CallStmt(stmt_loc, lhs)
        else:
            rhs = self.expression()
            stmt = A.Assign(stmt_loc, lhs, A.Binary(rhs.loc, op, lhs, rhs) if op else rhs)
        if not self.at(")"):
            self.expect(",")
        return stmt

    def if_stmt(self):
        loc = self.expect("if").loc
        self.expect("(")
        cond = self.expression()
        self.expect(")")
        then = self.statement()
        other = self.statement() if self.accept("else") else None
        return A.If(loc, cond, then, other)

    def switch_stmt(self):
        loc = self.expect("switch").loc
        self.expect("(")
        e = self.expression()
        self.expect(")")
        self.expect("{")
        cases = []
        while not self.accept("}"):
            cloc = self.tok.loc
            if self.accept("default"):
                label = A.DefaultExpr(cloc)
            else:
                label = self.expression()
            self.expect(":")
            body = self.block() if self.at("{") else None
            cases.append(A.SwitchCase(cloc, label, body))
        return A.Switch(loc, e, cases)

    # ------------------------------------------------------------ expressions
    def expression(self):
        cond = self.binary(0)
        if self.at("?"):
            self.advance()
            loc = _start_loc(cond)
            then = self.expression()
            self.expect(":")
            other = self.expression()
            return A.Ternary(loc, cond, then, other)
        return cond

    def binary_op_here(self, ops):
        t = self.tok
        if t.kind != "op":
            return None
        if t.text == ">" and self.at(">=", 1) and self.peek().glued:
            return None                                  # `>>=`: a compound assignment
        if t.text == ">" and ">>" in ops and self.at(">", 1) and self.peek().glued:
            return ">>"
        return t.text if t.text in ops else None

    def binary(self, level):
        if level == len(_BINARY_PREC):
            return self.unary()
        left = self.binary(level + 1)
        while True:
            op = self.binary_op_here(_BINARY_PREC[level])
            if op is None:
                return left
            self.advance()
            if op == ">>":
                self.advance()
            right = self.binary(level + 1)
            left = A.Binary(_start_loc(left), op, left, right)

    def at_cast(self):
        return self.at("(") and self.at_type_start(1) and self._cast_ahead()

    def _cast_ahead(self):
        save = self.pos
        try:
            self.advance()
            self.type_ref()
            return self.at(")")
        except CompileError:
            return False
        finally:
            self.pos = save

    def unary(self):
        t = self.tok
        if t.kind == "op" and t.text in ("!", "~", "-", "+"):
            self.advance()
            return A.Unary(t.loc, t.text, self.unary())
        if self.at_cast():
            self.advance()
            ty = self.type_ref()
            self.expect(")")
            return A.Cast(t.loc, ty, self.unary())
        return self.postfix(self.primary())

    def primary(self):
        t = self.tok
        if t.kind == "num":
            self.advance()
            v, w, s = t.value
            return A.IntLit(t.loc, v, w, s)
        if t.kind == "str":
            self.advance()
            return A.StrLit(t.loc, t.value)
        if self.accept("true") or self.accept("false"):
            return A.BoolLit(t.loc, t.text == "true")
        if self.accept("("):
            e = self.expression()
            self.expect(")")
            return e
        if self.at("{"):
            self.advance()
            return A.ListExpr(t.loc, self.expression_list("}"))
        if self.at("."):
            self.advance()
            return A.Name(t.loc, self.ident(), True)
        if t.kind == "kw" and t.text in ("error", "bit", "int", "bool", "varbit"):
            if t.text == "error" and self.at(".", 1):
                self.advance()
                return A.Name(t.loc, "error")
            return A.TypeExpr(t.loc, self.type_ref())
        if self.is_ident():
            self.advance()
            return A.Name(t.loc, t.text)
        raise self.error("expected an expression")

    def postfix(self, e):
        while True:
            if self.accept("."):
                name_tok = self.tok
                name = self.ident("member name") if not self.at("apply") else self.advance().text
                e = A.Member(_start_loc(e), e, name)
                e.name_loc = name_tok.loc
            elif self.at("["):
                self.advance()
                first = self.expression()
                if self.accept(":"):
                    lo = self.expression()
                    self.expect("]")
                    e = A.Slice(_start_loc(e), e, first, lo)
                else:
                    self.expect("]")
                    e = A.Index(_start_loc(e), e, first)
            elif self.at("("):
                e = A.Call(_start_loc(e), e, [], self.arguments())
            elif self.at("<") and self._generic_call_ahead():
                targs = self.type_args()
                e = A.Call(_start_loc(e), e, targs, self.arguments())
            else:
                return e

    def _generic_call_ahead(self):
        save = self.pos
        try:
            self.type_args()
            return self.at("(")
        except CompileError:
            return False
        finally:
            self.pos = save

    def arguments(self):
        self.expect("(")
        args = []
        while not self.accept(")"):
            if self.is_ident() and self.at("=", 1):
                t = self.advance()
                self.advance()
                args.append(A.NamedArg(t.loc, t.text, self.argument()))
            else:
                args.append(self.argument())
            if not self.accept(","):
                self.expect(")")
                break
        return args

    def argument(self):
        """A call argument's value: an expression, or `_` (don't care) on its own."""
        if self.tok.text == "_" and (self.at(",", 1) or self.at(")", 1)):
            return A.DefaultExpr(self.advance().loc)
        return self.expression()

    def expression_list(self, close):
        return self.comma_list(self.expression, close)

    def comma_list(self, item, close):
        """`item, item, ... close` (the opening token already consumed)."""
        items = []
        while not self.accept(close):
            items.append(item())
            if not self.accept(","):
                self.expect(close)
                break
        return items


def _start_loc(e):
    return e.loc


def _annotation_args(tokens):
    args = []
    for t in tokens:
        if t.kind == "str":
            args.append(A.StrLit(t.loc, t.value))
        elif t.kind == "num":
            args.append(A.IntLit(t.loc, *t.value))
        elif t.text != ",":
            args.append(A.Name(t.loc, t.text))
    return args


def parse(text, filename):
    return Parser(tokenize(text, filename)).parse_program()

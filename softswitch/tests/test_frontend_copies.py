"""copies.py leaves out only copies that cannot matter: a differential fuzz test.

Random programs (fixed seed) call functions, actions and a sub-control, and apply a
table whose actions list binds an action's parameters, all bound to a handful of fields
that alias each other often; each is compiled twice, as the
front-end does and with every parameter given a temporary (P4-16 6.8 taken literally:
copy in, copy out), and the same packets through both must give the same bytes."""
import json
import random

import softswitch_engine as se
from scapy.all import IP, Ether, UDP, raw

from softswitch_p4c import copies
from softswitch_p4c.driver import compile_source
from test_frontend_lowering import program

SEED = 18
PROGRAMS = 40
PACKETS = 4
STORAGE = ["hdr.ipv4.ttl", "hdr.ipv4.protocol", "meta.m8", "l"]   # l: a control local
DIRECTIONS = ["in", "inout", "out"]


class Generator:
    def __init__(self, rng):
        self.rng = rng

    def value(self, readable):
        r = self.rng
        if r.random() < 0.25 or not readable:
            return f"8w{r.randrange(256)}"
        left = r.choice(readable)
        return left if r.random() < 0.4 else f"{left} {r.choice('+^-')} {self.value(readable)}"

    def params(self, n):
        return [(self.rng.choice(DIRECTIONS), f"p{i}") for i in range(n)]

    def call(self, name, params, readable, writable):
        args = [self.value(readable) if d == "in" or not writable else self.rng.choice(writable)
                for d, _ in params]
        if any(d != "in" for d, _ in params) and not writable:
            return None
        return f"{name}({', '.join(args)});"

    def body(self, params, storage, callees):
        """Statements over the parameters (and `storage`, named directly) that write only
        what may be written; an out parameter is set first (it starts undefined)."""
        r = self.rng
        stmts = [f"{p} = {self.value([])};" for d, p in params if d == "out"]
        readable = [p for _, p in params] + storage
        writable = [p for d, p in params if d != "in"] + storage
        for _ in range(r.randrange(1, 4)):
            if callees and r.random() < 0.4:
                name, inner = r.choice(callees)
                stmt = self.call(name, inner, readable, writable)
                if stmt:
                    stmts.append(stmt)
            elif writable:
                stmts.append(f"{r.choice(writable)} = {self.value(readable)};")
        return " ".join(stmts)

    def program(self):
        functions, decls = [], []
        for i in range(2):                  # top level: they reach only their parameters
            params = self.params(self.rng.randrange(1, 4))
            decls.append(f"void f{i}({', '.join(f'{d} bit<8> {p}' for d, p in params)}) "
                         f"{{ {self.body(params, [], functions)} }}")
            functions.append((f"f{i}", params))
        callees, actions = list(functions), []
        for i in range(3):                  # the control's: they also name its storage
            params = self.params(self.rng.randrange(1, 4))
            actions.append(f"action a{i}({', '.join(f'{d} bit<8> {p}' for d, p in params)}) "
                           f"{{ {self.body(params, STORAGE, callees)} }}")
            callees.append((f"a{i}", params))
        params = self.params(self.rng.randrange(1, 4))     # a sub-control: its parameters only
        sub = (f"control Sub({', '.join(f'{d} bit<8> {p}' for d, p in params)}) "
               f"{{ apply {{ {self.body(params, [], functions)} }} }}")
        callees.append(("sub.apply", params))
        name, params = self.rng.choice(callees[2:5])       # an action a table binds
        bound = self.call(name, params, STORAGE, STORAGE)[:-1]
        table = f"table t {{ actions = {{ {bound}; }} default_action = {bound}; }}"
        calls = [self.call(name, params, STORAGE, STORAGE)
                 for name, params in (self.rng.choice(callees) for _ in range(5))]
        apply = ("sm.egress_spec = 1; l = hdr.ipv4.ttl ^ 8w0x5a; " + " ".join(calls) +
                 " t.apply(); hdr.ipv4.identification = meta.m8 ++ l;")
        return program(decls="\n".join(decls), controls=sub, apply=apply,
                       ingress="bit<8> l;\nSub() sub;\n" + "\n".join(actions) + "\n" + table)


def run(source, tmp_path, packets):
    """(primitives in the program's actions, what each packet gives)."""
    j, _ = compile_source(source, tmp_path)
    sw = se.Switch(ports={})
    sw.load_pipeline(json.dumps(j))
    return sum(len(a["primitives"]) for a in j["actions"]), \
        [sw.process_packet(0, p) for p in packets]


def test_leaving_out_copies_never_changes_a_packet(tmp_path, monkeypatch):
    rng = random.Random(SEED)
    gen = Generator(rng)
    packets = [raw(Ether() / IP(ttl=rng.randrange(256), proto=rng.randrange(256),
                                id=rng.randrange(65536)) / UDP()) for _ in range(PACKETS)]
    every_copy = lambda params, bindings, effects: {name for name, _ in params}  # noqa: E731
    fewer = 0
    for i in range(PROGRAMS):
        source = gen.program()
        ops, decided = run(source, tmp_path, packets)
        with monkeypatch.context() as m:
            m.setattr(copies, "needing_copies", every_copy)
            literal_ops, literal = run(source, tmp_path, packets)
        assert decided == literal, f"program {i}:\n{source}"
        fewer += ops < literal_ops
    assert fewer >= PROGRAMS // 2       # the pass did leave copies out, in most programs

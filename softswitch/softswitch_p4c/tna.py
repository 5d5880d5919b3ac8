"""The TNA / T2NA architecture's checks (`softswitch-p4c --arch tna|t2na`).

A TNA program is parsed, its declarations resolved with the v1model front-end's
`Compiler` (types, constants, externs), the `Switch(Pipeline(...))` package
checked against the architecture's block signatures, and every parser and
control of the pipelines, every top-level extern instance, action and function
resolved and typed into the IR by the checker (`check.py`). The Tofino limits are
`tofino_lint.py`'s job (over that IR); running the program on the built-in
target is `tna_lower.py`'s.
"""
from . import ast as A
from . import ir
from .check import BlockChecker, check_functions, check_parameters
from .compiler import Compiler
from .errors import CompileError
from .unroll import replace_loops

ARCH_DEFINES = {"tna": ["__TARGET_TOFINO__=1"], "t2na": ["__TARGET_TOFINO__=2"]}
CELL_BYTES = {"tna": 80, "t2na": 176}      # queue-depth unit of Tofino 1 / Tofino 2
PIPELINE_ROLES = ("ingress_parser", "ingress", "ingress_deparser",
                  "egress_parser", "egress", "egress_deparser")
ROLE_TYPES = ("IngressParserT", "IngressT", "IngressDeparserT",
              "EgressParserT", "EgressT", "EgressDeparserT")


def check_program(program, source_name):
    """Type-check a parsed TNA/T2NA program into an `ir.Program`; raises CompileError at
    the first problem."""
    comp = Compiler(program, source_name)
    instances = {}
    for d in program.decls:
        if isinstance(d, A.Instance):
            instances[d.name] = d
        else:
            comp.declare_global(d)
    check_parameters(program)
    pipelines = [_pipeline_blocks(comp, instances, arg) for arg in _switch_args(instances)]
    nodes, unrolled = {}, {}
    externs = _global_externs(comp, instances, nodes)
    top = check_functions(comp, program, externs, nodes, unrolled)
    checked = [{role: _checker(comp, decl, externs, top, nodes, unrolled).block()
                for role, decl in blocks.items()} for blocks in pipelines]
    if unrolled:        # as check_v1model: the loops the checker's scopes decide, unrolled
        replace_loops([d for d in program.decls if isinstance(
            d, (A.ActionDecl, A.FunctionDecl, A.ControlDecl, A.ParserDecl))], unrolled)
    return ir.Program(program, checked, externs, top, nodes, comp.warnings)


def _checker(comp, decl, externs, top, nodes, unrolled):
    checker = BlockChecker(comp, decl, externs, top)
    checker.program_nodes, checker.unrolled = nodes, unrolled
    return checker


def _global_externs(comp, instances, nodes):
    """Top-level extern instances (e.g. a Register shared by controls): name -> ir.Instance;
    RegisterAction bodies are checked here, with only their own parameters in scope."""
    externs = {}
    for name, inst in instances.items():
        if inst.type.name not in ("Switch", "Pipeline"):
            externs[name] = _checker(comp, None, externs, None, nodes, None).instance(inst)
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

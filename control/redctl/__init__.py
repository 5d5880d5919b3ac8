"""redctl: P4Runtime controller for the RED/ECN switch of p4src/red_ecn.p4."""
from . import adaptive
from .controller import Controller, Sample
from .convert import PortSpec, RedConfig, RedConstants
from .p4rt import P4RuntimeError

__all__ = ["adaptive", "Controller", "PortSpec", "RedConfig", "RedConstants", "Sample", "P4RuntimeError"]

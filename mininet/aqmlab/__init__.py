"""aqmlab: the Mininet lab — topologies, tuned TCP hosts, workloads, metrics,
experiments and reports for the P4 RED/ECN bottleneck switch."""

__version__ = "0.1.0"

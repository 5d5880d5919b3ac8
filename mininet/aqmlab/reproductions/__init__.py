"""Reproductions of published studies, each one command: `aqmlab study NAME`."""

STUDIES = {"rfc2884": "aqmlab.reproductions.rfc2884",
           "rfc2415": "aqmlab.reproductions.rfc2415",
           "rfc889": "aqmlab.reproductions.rfc889",
           "buffers": "aqmlab.reproductions.buffers"}

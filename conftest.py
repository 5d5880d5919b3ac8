"""pytest set-up shared by every test folder (testpaths in pyproject.toml)."""
from softswitch_server import netlab

# `make test &` in a script starts pytest ignoring SIGINT, which the processes
# the tests start would inherit; the tests stop them with SIGINT.
netlab.heed_sigint()

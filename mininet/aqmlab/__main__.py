from aqmlab.cli import main

raise SystemExit(main())

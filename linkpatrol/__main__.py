from linkpatrol.cli import main

raise SystemExit(main())

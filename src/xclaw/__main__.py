from xclaw.cli.app import main

main()

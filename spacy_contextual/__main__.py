from .cli.console import main

main()

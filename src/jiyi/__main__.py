from jiyi.cli import main

main()

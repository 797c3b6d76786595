from attndyn.cli import main

main()

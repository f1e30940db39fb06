from diagnose.cli import run

run()

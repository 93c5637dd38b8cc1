from linkpatrol.cli import run

run()

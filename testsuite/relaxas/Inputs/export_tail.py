# Appended to a `relaxas --dump python` program by the lit tests: writes what it rebuilt.
import sys

exe.export(sys.argv[1])

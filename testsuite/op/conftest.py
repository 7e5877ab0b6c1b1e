import pathlib
import sys

# numeric.py sits beside the tests that use it.
sys.path.insert(0, str(pathlib.Path(__file__).parent))

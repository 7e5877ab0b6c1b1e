import pathlib
import sys

# The strategies module sits beside the tests that use it.
sys.path.insert(0, str(pathlib.Path(__file__).parent))

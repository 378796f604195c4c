"""relucore: gradient descent on shallow ReLU networks in primal-dual coordinates."""
from relucore._core import __version__

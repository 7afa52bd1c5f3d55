"""The Spark Connect client side of fullwindow: the relation message (``connect_pb2``, generated
from proto/fullwindow/connect.proto by dev/gen-proto) and the logical plan that carries it."""

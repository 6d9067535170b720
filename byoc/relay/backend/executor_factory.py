"""``tvm.relay.backend.executor_factory``: what ``relay.build`` returns (``byoc/runtime/factory.py``)."""
from ...runtime.factory import GraphExecutorFactoryModule

ExecutorFactoryModule = GraphExecutorFactoryModule

__all__ = ["ExecutorFactoryModule", "GraphExecutorFactoryModule"]

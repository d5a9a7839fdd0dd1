"""Host↔device transfer checks: pinned bandwidth against the negotiated link
(``transfer.pinned``), the cost of pageable memory (``transfer.pageable``) and the penalty of
remote-socket host memory (``transfer.remote-numa``)."""

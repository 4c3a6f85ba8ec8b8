"""The CPU default: a compiler without a language model.

Pipeline (one module each): ``request`` reads what the text asks for (place,
counting, element types, numbers), ``neighbours`` finds the most similar
training requests, ``edits`` rewrites their queries towards the request through
the ``overpassql`` AST, ``features`` describes every edited candidate,
``selection`` scores them with a model that ``train`` fits on the training split
(leave-one-out against the exact metric), and ``model`` bundles it all on disk.
"""

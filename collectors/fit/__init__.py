"""What fits: kubelet's next CPU decision predicted from the node's own files (issue 36).

kubelet.py is the port of kubelet's CPU manager and topology manager (pure functions of a
case); predict.py builds the case from pinscope's NodeSnapshot and answers "what fits".
"""

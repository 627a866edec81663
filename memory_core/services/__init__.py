"""Use cases: each public function or method is one thing a client can ask of the memory."""

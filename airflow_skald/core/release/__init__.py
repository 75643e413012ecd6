"""What a run leaves: the atomic commit, the output lease, the manifest, the report, verification, audit."""

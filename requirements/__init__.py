"""The project's pins, shipped inside the package as ``sentcl._requirements``: ``lock.txt`` (every
dependency's version, which the notebooks' install cell installs: :func:`sentcl.book.publishing.install.install_dependencies`)
and ``torch.txt``."""

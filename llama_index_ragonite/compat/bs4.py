"""BeautifulSoup's ``html.parser`` tree builder as a class to subclass (checked on beautifulsoup4 4.15.0).

``parsing/html5_tree.py`` subclasses it (its attribute handling, fed from lexbor's HTML5 tree). The class
is defined in the private ``bs4.builder._htmlparser``; bs4 registers it under the public
``builder_registry.lookup("html.parser")`` at run time only, which a type checker cannot follow to a base
class. ``tests/test_compat.py`` checks that both name the same class.
"""

from __future__ import annotations

from bs4.builder._htmlparser import HTMLParserTreeBuilder

__all__ = ["HTMLParserTreeBuilder"]

"""Text datasets with mosaicml-streaming's ``streaming.text`` classes' API.

``StreamingC4`` and ``StreamingPile`` tokenize with Hugging Face transformers, which is
imported only when one of them is built (``pip install 'streamx-data[text]'``).
"""

from streamx.text.c4 import StreamingC4
from streamx.text.enwiki import StreamingEnWiki
from streamx.text.pile import StreamingPile

__all__ = ["StreamingC4", "StreamingEnWiki", "StreamingPile"]

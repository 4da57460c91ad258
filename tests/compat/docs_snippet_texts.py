"""mosaicml-streaming's documentation code blocks (docs/source of mosaicml/streaming 0.13.0),
kept verbatim as data for ``test_docs_snippets.py``, which runs them against both libraries.

Each constant is one block, or a run of blocks the page reads in one session; the page it
comes from is named in ``test_docs_snippets.SNIPPETS``. Edit only to follow the upstream docs.
"""

from __future__ import annotations

QUICK_START_WRITE = """
import numpy as np
from PIL import Image
from shutil import rmtree
from uuid import uuid4
from streaming import MDSWriter

# Local or remote directory path to store the output compressed files.
# For remote directory, the output files are automatically upload to a remote cloud storage
# location.
out_root = 'dirname'

# A dictionary of input fields to an Encoder/Decoder type
columns = {
    'uuid': 'str',
    'img': 'jpeg',
    'clf': 'int'
}

# Compression algorithm name
compression = 'zstd'

# Hash algorithm name
hashes = 'sha1', 'xxh64'

# Generates random images and classes for input sample
samples = [
    {
        'uuid': str(uuid4()),
        'img': Image.fromarray(np.random.randint(0, 256, (32, 48, 3), np.uint8)),
        'clf': np.random.randint(10),
    }
    for _ in range(1000)
]

# Call `MDSWriter` to iterate through the input data and write into a shard `mds` file
with MDSWriter(out=out_root, columns=columns, compression=compression, hashes=hashes) as out:
    for sample in samples:
        out.write(sample)

# Clean up
rmtree(out_root)
"""

QUICK_START_READ = """
from torch.utils.data import DataLoader
from streaming import StreamingDataset

# Remote directory (S3 or local filesystem) where dataset is stored
remote_dir = 's3://datapath'

# Local directory where dataset is cached during operation
local_dir = 'local_dir'
dataset = StreamingDataset(local=local_dir, remote=remote_dir, split=None, shuffle=True)

# Create PyTorch DataLoader
dataloader = DataLoader(dataset)
"""

CONVERSION_CUSTOM_ENCODING = """
import numpy as np
from typing import Any

from streaming.base.format.mds.encodings import Encoding, _encodings

class Complex128(Encoding):

    def encode(self, obj: Any) -> bytes:
        return np.complex128(obj).tobytes()

    def decode(self, data: bytes) -> Any:
        return np.frombuffer(data, np.complex128)[0]

_encodings['complex128'] = Complex128
"""

CONVERSION_CLASSIFICATION = '''
import numpy as np

class RandomClassificationDataset:
    """Classification dataset drawn from a normal distribution.

    Args:
        shape: data sample dimensions (default: (10,))
        size: number of samples (default: 10000)
        num_classes: number of classes (default: 2)
    """

    def __init__(self, shape=(10,), size=10000, num_classes=2):
        self.size = size
        self.x = np.random.randn(size, *shape)
        self.y = np.random.randint(0, num_classes, size)

    def __len__(self):
        return self.size

    def __getitem__(self, index: int):
        return self.x[index], self.y[index]
output_dir = 'test_output_dir'
columns = {'x': 'pkl', 'y': 'int64'}
compression = 'zstd:7' # compress shards with ZStandard, level 7
hashes = ['sha1'] # Use only SHA1 hashing on each shard
# Here we use a human-readable string, but we could also
# pass in an int specifying the number of bytes.
limit = '10kb'
from streaming.base import MDSWriter

dataset = RandomClassificationDataset()
with MDSWriter(out=output_dir, columns=columns, compression=compression, hashes=hashes, size_limit=limit) as out:
    for x, y in dataset:
        out.write({'x': x, 'y': y})
from shutil import rmtree

rmtree(output_dir)
'''  # noqa: E501

NDARRAY_DYNAMIC = """
import numpy as np
from streaming.base import MDSWriter, StreamingDataset
# Write to MDS
with MDSWriter(out='my_dataset1/',
               columns={'my_array': 'ndarray'}) as out:
    for i in range(42):
        # Dimension can change
        ndim = np.random.randint(1, 5)
        shape = np.random.randint(1, 5, ndim)
        shape = tuple(shape.tolist())
        my_array = np.random.normal(0, 1, shape)
        out.write({'my_array': my_array})

# Inspect dataset
dataset = StreamingDataset(local='my_dataset1/', batch_size=1)
for i in range(dataset.num_samples):
    print(dataset[i])
"""

NDARRAY_FIXED_DTYPE = """
# Write to MDS
with MDSWriter(out='my_dataset2/',
               columns={'my_array': 'ndarray:int16'}) as out:
    for i in range(42):
        # Dimension can change
        ndim = np.random.randint(1, 5)
        shape = np.random.randint(1, 5, ndim)
        shape = tuple(shape.tolist())
        # Datatype is fixed
        my_array = np.random.normal(0, 100, shape).astype(np.int16)
        out.write({'my_array': my_array})

# Inspect dataset
dataset = StreamingDataset(local='my_dataset2/', batch_size=1)
for i in range(dataset.num_samples):
    print(dataset[i])
"""

NDARRAY_FIXED_SHAPE = """
# Write to MDS
with MDSWriter(out='my_dataset3/',
               columns={'my_array': 'ndarray:int16:3,3,3'}) as out:
    for i in range(42):
        # Shape is fixed
        shape = 3, 3, 3
        # Datatype is fixed
        my_array = np.random.normal(0, 100, shape).astype(np.int16)
        out.write({'my_array': my_array})

# Inspect dataset
dataset = StreamingDataset(local='my_dataset3/', batch_size=1)
for i in range(dataset.num_samples):
    print(dataset[i])
import subprocess

# Dynamic shape, dynamic dtype uses most space
subprocess.run(['du', '-sh', 'my_dataset1'])

# Dynamic shape, fixed dtype uses less space
subprocess.run(['du', '-sh', 'my_dataset2'])

# Fixed shape, fixed dtype uses the least space
subprocess.run(['du', '-sh', 'my_dataset3'])
from shutil import rmtree

rmtree('my_dataset1')
rmtree('my_dataset2')
rmtree('my_dataset3')
"""

USER_GUIDE = '''
import numpy as np

class RandomClassificationDataset:
    """Classification dataset drawn from a normal distribution.

    Args:
        shape: shape of features (default: (5, 1, 1))
        size: number of samples (default: 100)
        num_classes: number of classes (default: 2)
    """

    def __init__(self, shape=(1, 1, 1), size=100, num_classes=2):
        self.size = size
        self.x = np.random.randn(size, *shape)
        self.y = np.random.randint(0, num_classes, size=(size,))

    def __len__(self):
        return self.size

    def __getitem__(self, index: int):
        return self.x[index], self.y[index]
output_dir = 'test_output_dir'
columns = {'x': 'pkl', 'y': 'pkl'}
compression = 'zstd:7'
hashes = ['sha1']
# Number act as a byte, e.g., 1024 bytes
limit = 1024
def each(samples):
    """Generator over each dataset sample.

    Args:
        samples (list): List of samples of (feature, label).

    Yields:
        Sample dicts.
    """
    for x, y in samples:
        yield {
            'x': x,
            'y': y,
        }
from streaming.base import MDSWriter

dataset = RandomClassificationDataset()
with MDSWriter(out=output_dir, columns=columns, compression=compression, hashes=hashes, size_limit=limit) as out:
    for sample in each(dataset):
        out.write(sample)
from shutil import rmtree

rmtree(output_dir)
from streaming import StreamingDataset

class CustomDataset(StreamingDataset):
    def __init__(self, local, remote):
        super().__init__(local=local, remote=remote)

    def __getitem__(self, idx: int) -> Any:
        obj = super().__getitem__(idx)
        return obj['x'], obj['y']
# Local filesystem directory where dataset is cached during operation
local = '/tmp/cache'

# Remote directory (S3 or local filesystem) where dataset is stored
remote='s3://mybucket/myfolder'

dataset = CustomDataset(local=local, remote=remote)
from torch.utils.data import DataLoader

dataloader = DataLoader(dataset=dataset)
'''  # noqa: E501

CONCEPTS_STREAMS = """
# Stream 1 uses its own set of shard files and will be 1/4 of the training dataset.
stream_1 = Stream(
    remote = 's3://stream_1/directory',
    local = '/local/cache/stream_1',
    proportion = 0.25,
)
# Stream 2 is similar to above, but will be 3/4 of the training dataset.
stream_2 = Stream(
    remote = 's3://stream_2/directory',
    local = '/local/cache/stream_2',
    proportion = 0.75,
)

# This dataset uses multiple streams.
dataset = StreamingDataset(streams=[stream_1, stream_2], batch_size=4)
"""

CONCEPTS_SINGLE = """
dataset = StreamingDataset(remote='s3://some/path', local='/local/path', batch_size=4)
"""

MIX_STREAMS = """
stream_A = Stream(
    remote = 's3://stream_A_remote',
    local = '/tmp/stream_A',
    proportion = 0.25,
)
stream_B = Stream(
    remote = 's3://stream_B_remote',
    local = '/tmp/stream_B',
    proportion = 0.75,
)
"""

MIX_PROPORTION = (
    MIX_STREAMS
    + """dataset = StreamingDataset(
    streams = [stream_A, stream_B],
)
"""
)

MIX_EPOCH_SIZE = """
dataset = StreamingDataset(
    epoch_size = 400,
    streams = [stream_A, stream_B],    # With proportions A: 0.25 and B: 0.75.
)
"""

MIX_REPEAT = """
stream_A = Stream(
    remote = 's3://stream_A_remote',
    local = '/tmp/stream_A',
    repeat = 3,
)
"""

MIX_CHOOSE = """
stream_A = Stream(
    remote = 's3://stream_A_remote',
    local = '/tmp/stream_A',
    choose = 250,
)
"""

RESUMPTION = """
from streaming import StreamingDataset
from streaming import StreamingDataLoader

dataset = StreamingDataset(local='/tmp/cache', remote='s3://remote/dataset', batch_size=1)
dataloader = StreamingDataLoader(dataset, batch_size=1)

# Here, we assume each sample in our dataset has fields 'x' and 'y'.
# We save the dataloader state after 4 batches, and stop after 6 batches.
state_dict = None
for i, batch in enumerate(dataloader):
    print(i, batch['x'], batch['y'])
    if i == 4:
        state_dict = dataloader.state_dict()
    if i == 6:
        break
# Create a new dataset
dataset_2 = StreamingDataset(local='cache', remote='path', batch_size=1)
dataloader_2 = StreamingDataLoader(dataset_2, batch_size=1)
# Load in the state dict that was previously saved
dataloader_2.load_state_dict(state_dict)

# Iterate over the dataset, which will start from batch 5 now.
for i, batch in enumerate(dataloader_2):
    print(i, batch['x'], batch['y'])
"""

FAQ_CLEAN_SHM = """
>>> import streaming.base.util as util
>>> util.clean_stale_shared_memory()
"""

FAQ_SPANNER = """
# Instantiate a StreamingDataset however you would like
dataset = StreamingDataset(
    ...
)
# Retrieves the number of unique samples -- no up or down sampling applied
num_dataset_samples = dataset.size
# Will contain tuples of (stream id, shard id, sample id)
stream_shard_sample_ids = []
for global_sample_idx in range(num_dataset_samples):
    # Go from global sample index -> global shard index and relative sample index (in the shard)
    global_shard_idx, relative_sample_idx = dataset.spanner[global_sample_idx]
    # Get the stream index of that shard
    stream_idx = dataset.stream_per_shard[global_shard_idx]
    # Get the relative shard index (in the stream) by subtracting the offset
    relative_shard_idx = global_shard_idx - dataset.shard_offset_per_stream[stream_idx]

    stream_shard_sample_ids.append((stream_idx, relative_shard_idx, relative_sample_idx))
"""

SHUFFLE_ON = """
dataset = StreamingDataset(
    ...
    shuffle = True,
    ...
)
"""

EPOCH_SIZE = """
dataset = StreamingDataset(
    ...
    epoch_size = 10000,    # Each epoch will be 10k samples.
    ...
)
"""

# The replication snippet (replication=4) needs a job of 4 ranks: tests/dist covers it.

IMPORTS = "from streaming import Stream, StreamingDataset\n"

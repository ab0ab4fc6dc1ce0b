"""Train a small Keras model on a tensorized output: a TFRecord output read with
`make_dataset`, or a Parquet output (`--output_format parquet`) read with
`Dataset.from_output` — the same tensors either way.

    python -m pipelines.tensorize                  # writes ./tensorize_output from the sample
    python examples/train_keras.py tensorize_output

The model predicts the sample's `response` (a rating) from the movie's latent factors, its
hashed id (an embedding over `movieBucket`), its genres (a bag of `genreIds` embeddings) and
the sparse `genreVector`, all shaped as the output's metadata says.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf

from beam_tensorize.tf import Dataset, load_metadata, make_dataset


def build_model(metadata: dict) -> tf.keras.Model:
    """A regression model over four of the sample's tensors, sized from the metadata."""
    by_name = {t["name"]: t for t in metadata["features"]}
    buckets = by_name["movieBucket"]["numUniqueValues"]
    genre_ids = by_name["genreIds"]["numUniqueValues"]
    vector_size = by_name["genreVector"]["shape"][-1]
    factors = tf.keras.Input(shape=(30,), name="movieLatentFactors")
    bucket = tf.keras.Input(shape=(), dtype=tf.int64, name="movieBucket")
    genres = tf.keras.Input(shape=(None,), dtype=tf.int64, ragged=True, name="genreIds")
    vector = tf.keras.Input(shape=(vector_size,), name="genreVector")
    bucket_embedding = tf.keras.layers.Embedding(buckets, 8)(bucket)
    genre_embedding = tf.keras.layers.Embedding(genre_ids, 8)(genres)
    genre_bag = tf.keras.layers.Lambda(lambda x: tf.reduce_mean(x, axis=1))(genre_embedding)
    joined = tf.keras.layers.Concatenate()([factors, bucket_embedding, genre_bag, vector])
    hidden = tf.keras.layers.Dense(16, activation="relu")(joined)
    rating = tf.keras.layers.Dense(1)(hidden)
    model = tf.keras.Model([factors, bucket, genres, vector], rating)
    model.compile(optimizer="adam", loss="mse")
    return model


def inputs(output_dir: str, batch_size: int = 32, **options) -> tf.data.Dataset:
    """(model inputs, rating) batches: the sparse vector made dense for the Dense layers. A
    Parquet output is read with `Dataset.from_output` (then `shuffle_buffer`, `seed` and
    `repeat` apply to its batches)."""

    def to_model(features, labels):
        model_inputs = {
            "movieLatentFactors": features["movieLatentFactors"],
            "movieBucket": features["movieBucket"],
            "genreIds": features["genreIds"],
            "genreVector": tf.sparse.to_dense(features["genreVector"]),
        }
        return model_inputs, tf.cast(labels["response"], tf.float32)

    formats = {info.get("format", "tfrecord") for info in load_metadata(output_dir)["data"].values()}
    if formats == {"parquet"}:
        dataset = Dataset.from_output(output_dir, batch_size=batch_size)
        if options.get("shuffle_buffer"):
            dataset = dataset.shuffle(
                max(1, options["shuffle_buffer"] // batch_size), seed=options.get("seed")
            )
        if options.get("repeat", 1) is None:
            dataset = dataset.repeat()
        dataset = dataset.map(lambda batch: ({k: v for k, v in batch.items() if k != "response"}, batch))
    else:
        dataset = make_dataset(output_dir, batch_size=batch_size, **options)
    return dataset.map(to_model)


def train(output_dir: str, steps: int = 20) -> float:
    """Train for `steps` batches (shuffled, repeated); returns the last loss."""
    model = build_model(load_metadata(output_dir))
    dataset = inputs(output_dir, shuffle_files=True, shuffle_buffer=300, seed=1, repeat=None)
    history = model.fit(dataset, steps_per_epoch=steps, epochs=1, verbose=0)
    return float(history.history["loss"][-1])


if __name__ == "__main__":
    folder = sys.argv[1] if len(sys.argv) > 1 else "tensorize_output"
    print(f"loss after 20 steps: {train(folder):.3f}")

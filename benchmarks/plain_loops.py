"""Plain hand-written LeNet-5 training loops, one per framework, the way each framework's documentation
writes one (its usual optimizer, no sensitivity code), for benchmarks/bench_adapters.py to time the adapters
against. Each class: __init__(threads, weights, x, y, batch, lr, momentum), epoch(order) -> mean loss
(as many steps as order has rows), logits(x). Weights come in neutral layout (kernels (out, in, kh, kw),
dense (in, out)); images NCHW.
"""
from __future__ import annotations

import numpy as np


def _nhwc_dense(kernel: np.ndarray) -> np.ndarray:
    """LeNet's first dense kernel, rows from (C, H, W) to (H, W, C) order."""
    return kernel.reshape(50, 4, 4, 500).transpose(1, 2, 0, 3).reshape(800, 500)


class PlainKeras:
    """Sequential model, compile with SGD(momentum), fit one epoch on the epoch's order."""

    def __init__(self, threads, weights, x, y, batch, lr, momentum):
        import keras
        from keras import layers
        self.batch = batch
        self.model = keras.Sequential([keras.Input((28, 28, 1)), layers.Conv2D(20, 5), layers.MaxPooling2D(2),
                                       layers.Conv2D(50, 5), layers.MaxPooling2D(2), layers.Flatten(),
                                       layers.Dense(500, activation="relu"), layers.Dense(10)])
        (k1, b1), (k2, b2), (k3, b3), (k4, b4) = weights
        self.model.set_weights([k1.transpose(2, 3, 1, 0), b1, k2.transpose(2, 3, 1, 0), b2, _nhwc_dense(k3), b3,
                                k4, b4])
        self.model.compile(optimizer=keras.optimizers.SGD(lr, momentum=momentum),
                           loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        self.x, self.y = x.transpose(0, 2, 3, 1).copy(), y

    def epoch(self, order):
        idx = order.reshape(-1)
        history = self.model.fit(self.x[idx], self.y[idx], batch_size=self.batch, epochs=1, shuffle=False, verbose=0)
        return float(history.history["loss"][-1])

    def logits(self, x):
        return np.asarray(self.model.predict(x.transpose(0, 2, 3, 1), batch_size=1000, verbose=0))


class PlainJax:
    """Pure JAX functions with optax.sgd(momentum), one jitted step per batch."""

    def __init__(self, threads, weights, x, y, batch, lr, momentum):
        import jax
        import jax.numpy as jnp
        import optax
        self.jax, self.jnp, self.batch = jax, jnp, batch
        (k1, b1), (k2, b2), (k3, b3), (k4, b4) = weights
        self.params = [jnp.asarray(a) for a in (k1.transpose(2, 3, 1, 0), b1, k2.transpose(2, 3, 1, 0), b2,
                                               _nhwc_dense(k3), b3, k4, b4)]
        self.optimizer = optax.sgd(lr, momentum=momentum)
        self.state = self.optimizer.init(self.params)
        self.x, self.y = jnp.asarray(x.transpose(0, 2, 3, 1)), jnp.asarray(y)

        def forward(params, xb):
            k1, b1, k2, b2, k3, b3, k4, b4 = params
            dims = ("NHWC", "HWIO", "NHWC")
            pool = lambda h: jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")  # noqa: E731
            h = pool(jax.lax.conv_general_dilated(xb, k1, (1, 1), "VALID", dimension_numbers=dims) + b1)
            h = pool(jax.lax.conv_general_dilated(h, k2, (1, 1), "VALID", dimension_numbers=dims) + b2)
            h = jax.nn.relu(h.reshape(len(xb), -1) @ k3 + b3)
            return h @ k4 + b4

        def loss(params, xb, yb):
            return optax.softmax_cross_entropy_with_integer_labels(forward(params, xb), yb).mean()

        def step(params, state, xb, yb):
            value, grads = jax.value_and_grad(loss)(params, xb, yb)
            updates, state = self.optimizer.update(grads, state)
            return optax.apply_updates(params, updates), state, value

        self.forward, self.step = jax.jit(forward), jax.jit(step)

    def epoch(self, order):
        xs, ys = self.x[order.reshape(-1)], self.y[order.reshape(-1)]
        losses = []
        for i in range(len(order)):
            sl = slice(i * self.batch, (i + 1) * self.batch)
            self.params, self.state, value = self.step(self.params, self.state, xs[sl], ys[sl])
            losses.append(value)
        return float(self.jnp.mean(self.jnp.stack(losses)))

    def logits(self, x):
        return np.asarray(self.forward(self.params, self.jnp.asarray(x.transpose(0, 2, 3, 1))))


class PlainMxnet:
    """Gluon HybridSequential, hybridized, gluon.Trainer('sgd', momentum), autograd.record per batch."""

    def __init__(self, threads, weights, x, y, batch, lr, momentum):
        import mxnet as mx
        from mxnet import autograd, gluon
        from mxnet.gluon import nn
        self.mx, self.autograd, self.batch = mx, autograd, batch
        self.net = nn.HybridSequential()
        self.net.add(nn.Conv2D(20, 5), nn.MaxPool2D(2, 2), nn.Conv2D(50, 5), nn.MaxPool2D(2, 2), nn.Flatten(),
                     nn.Dense(500, activation="relu"), nn.Dense(10))
        self.net.initialize(ctx=mx.cpu())
        self.net(mx.nd.zeros((1, 1, 28, 28)))
        params = list(self.net.collect_params().values())
        for (kernel, bias), (w, b) in zip(weights, zip(params[0::2], params[1::2])):
            w.set_data(mx.nd.array(kernel.T if kernel.ndim == 2 else kernel))
            b.set_data(mx.nd.array(bias))
        self.net.hybridize(static_alloc=True, static_shape=True)
        self.trainer = gluon.Trainer(self.net.collect_params(), "sgd", {"learning_rate": lr, "momentum": momentum})
        self.loss = gluon.loss.SoftmaxCrossEntropyLoss()
        self.x, self.y = mx.nd.array(x), mx.nd.array(y)

    def epoch(self, order):
        nd = self.mx.nd
        idx = nd.array(order.reshape(-1), dtype="int64")
        xs, ys = nd.take(self.x, idx), nd.take(self.y, idx)
        total = 0.0
        for i in range(len(order)):
            xb, yb = xs[i * self.batch:(i + 1) * self.batch], ys[i * self.batch:(i + 1) * self.batch]
            with self.autograd.record():
                loss = self.loss(self.net(xb), yb).mean()
            loss.backward()
            self.trainer.step(1)  # the loss is already a mean
            total += loss.asscalar()
        return total / len(order)

    def logits(self, x):
        return self.net(self.mx.nd.array(x)).asnumpy()


class PlainChainer:
    """chainer.Sequential with MomentumSGD: cleargrads, backward, update per batch."""

    def __init__(self, threads, weights, x, y, batch, lr, momentum):
        import chainer
        import chainer.functions as F
        import chainer.links as L
        self.chainer, self.F, self.batch = chainer, F, batch
        convs = [L.Convolution2D(1, 20, 5), L.Convolution2D(20, 50, 5)]
        denses = [L.Linear(800, 500), L.Linear(500, 10)]
        for link, (kernel, bias) in zip(convs + denses, weights):
            link.W.array[...] = kernel.T if kernel.ndim == 2 else kernel
            link.b.array[...] = bias
        pool = lambda h: F.max_pooling_2d(h, 2, 2)  # noqa: E731
        self.model = chainer.Sequential(convs[0], pool, convs[1], pool, denses[0], F.relu, denses[1])
        self.optimizer = chainer.optimizers.MomentumSGD(lr=lr, momentum=momentum)
        self.optimizer.setup(self.model)
        self.x, self.y = x, y.astype(np.int32)

    def epoch(self, order):
        xs, ys = self.x[order.reshape(-1)], self.y[order.reshape(-1)]
        total = 0.0
        for i in range(len(order)):
            sl = slice(i * self.batch, (i + 1) * self.batch)
            loss = self.F.softmax_cross_entropy(self.model(xs[sl]), ys[sl])
            self.model.cleargrads()
            loss.backward()
            self.optimizer.update()
            total += float(loss.array)
        return total / len(order)

    def logits(self, x):
        with self.chainer.using_config("train", False), self.chainer.no_backprop_mode():
            return self.model(x).array


class PlainTheano:
    """The Deep Learning Tutorials' way: shared data, a compiled step with momentum updates and givens."""

    def __init__(self, threads, weights, x, y, batch, lr, momentum):
        import theano
        import theano.tensor as T
        from theano.tensor.nnet import conv2d
        from theano.tensor.signal.pool import pool_2d
        self.batch = batch
        self.params = [theano.shared(a.astype("float32")) for pair in weights for a in pair]
        k1, b1, k2, b2, k3, b3, k4, b4 = self.params
        inputs, labels, index = T.tensor4("x"), T.lvector("y"), T.lvector("i")

        def forward(h):
            h = pool_2d(conv2d(h, k1, filter_flip=False) + b1.dimshuffle("x", 0, "x", "x"), (2, 2), ignore_border=True)
            h = pool_2d(conv2d(h, k2, filter_flip=False) + b2.dimshuffle("x", 0, "x", "x"), (2, 2), ignore_border=True)
            h = T.nnet.relu(T.dot(h.flatten(2), k3) + b3)
            return T.dot(h, k4) + b4

        loss = T.nnet.categorical_crossentropy(T.nnet.softmax(forward(inputs)), labels).mean()
        velocities = [theano.shared(np.zeros_like(p.get_value())) for p in self.params]
        updates = []
        for p, v, g in zip(self.params, velocities, T.grad(loss, self.params)):
            new_v = momentum * v - lr * g
            updates += [(v, new_v), (p, p + new_v)]
        self.x, self.y = theano.shared(x), theano.shared(y.astype("int64"))
        self.step = theano.function([index], loss, updates=updates, givens={inputs: self.x[index], labels: self.y[index]})
        self.forward = theano.function([inputs], forward(inputs))

    def epoch(self, order):
        return float(np.mean([self.step(row) for row in order.astype("int64")]))

    def logits(self, x):
        return self.forward(x)


class PlainPytensor:
    """The Theano tutorials' way on PyTensor: shared weights and data, one compiled step whose `updates` are
    momentum SGD, the batch picked with `givens`. PyTensor has no convolution or pooling op, so the
    convolution is im2col from array ops (k*k shifted slices stacked, then one tensordot) and 2x2 pooling
    the elementwise maximum of the four strided slices (a reshape to (N, C, H/2, 2, W/2, 2) and a max over
    the pairs took 12-17 s per epoch against 3.3 s in back-to-back runs here). Mode "CVM", the C backend, as
    the adapter uses: the default numba backend took 771 s to compile LeNet and ran slower steps there
    (sensitivity/frameworks/pytensor_adapter.py).
    """

    def __init__(self, threads, weights, x, y, batch, lr, momentum):
        import pytensor
        import pytensor.tensor as pt
        pytensor.config.floatX = "float32"
        self.params = [pytensor.shared(a.astype("float32")) for pair in weights for a in pair]
        k1, b1, k2, b2, k3, b3, k4, b4 = self.params
        inputs, labels, index = pt.tensor4("x", dtype="float32"), pt.lvector("y"), pt.lvector("i")

        def conv(h, kernel, bias, size):  # valid correlation, stride 1, of (N, C, size, size) images
            out_channels, channels, k, _ = kernel.get_value().shape
            o = size - k + 1
            patches = pt.stack([h[:, :, i:i + o, j:j + o] for i in range(k) for j in range(k)], axis=2)
            columns = patches.reshape((h.shape[0], channels * k * k, o * o))  # (N, C*k*k, o*o)
            out = pt.tensordot(kernel.reshape((out_channels, channels * k * k)), columns, axes=[[1], [1]])
            out = out.dimshuffle(1, 0, 2).reshape((h.shape[0], out_channels, o, o))
            return out + bias.dimshuffle("x", 0, "x", "x")

        def pool(h):  # 2x2, stride 2
            return pt.maximum(pt.maximum(h[:, :, 0::2, 0::2], h[:, :, 0::2, 1::2]),
                              pt.maximum(h[:, :, 1::2, 0::2], h[:, :, 1::2, 1::2]))

        def forward(h):
            h = pool(conv(pool(conv(h, k1, b1, 28)), k2, b2, 12))
            h = pt.maximum(pt.dot(h.flatten(2), k3) + b3, 0)
            return pt.dot(h, k4) + b4

        probabilities = pt.special.softmax(forward(inputs), axis=1)
        loss = -pt.mean(pt.log(probabilities)[pt.arange(labels.shape[0]), labels])
        velocities = [pytensor.shared(np.zeros_like(p.get_value())) for p in self.params]
        updates = []
        for p, v, g in zip(self.params, velocities, pytensor.grad(loss, self.params)):
            new_v = np.float32(momentum) * v - np.float32(lr) * g
            updates += [(v, new_v), (p, p + new_v)]
        self.x, self.y = pytensor.shared(x.astype("float32")), pytensor.shared(y.astype("int64"))
        self.step = pytensor.function([index], loss, updates=updates,
                                      givens={inputs: self.x[index], labels: self.y[index]}, mode="CVM")
        self.forward = pytensor.function([inputs], forward(inputs), mode="CVM")

    def epoch(self, order):
        return float(np.mean([self.step(row) for row in order.astype("int64")]))

    def logits(self, x):
        return self.forward(x.astype("float32"))


PLAIN = {"keras": PlainKeras, "jax": PlainJax, "mxnet": PlainMxnet, "chainer": PlainChainer, "theano": PlainTheano,
         "pytensor": PlainPytensor}

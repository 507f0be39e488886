"""A small GAN whose discriminator step backpropagates into the generator's graph.

`fake` is fed to the discriminator undetached; the discriminator's backward frees
the generator's graph, and the generator step then backpropagates through it again.
"""
import torch
import torch.nn as nn

torch.manual_seed(0)
latent, data_dim = 4, 8
G = nn.Sequential(nn.Linear(latent, 16), nn.ReLU(), nn.Linear(16, data_dim))
D = nn.Sequential(nn.Linear(data_dim, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=2e-4)
opt_d = torch.optim.Adam(D.parameters(), lr=2e-4)
criterion = nn.BCEWithLogitsLoss()

for real in [torch.randn(16, data_dim) for _ in range(3)]:
    z = torch.randn(real.size(0), latent)
    fake = G(z)
    ones, zeros = torch.ones(real.size(0), 1), torch.zeros(real.size(0), 1)

    opt_d.zero_grad()
    d_loss = criterion(D(real), ones) + criterion(D(fake), zeros)
    d_loss.backward()
    opt_d.step()

    opt_g.zero_grad()
    g_loss = criterion(D(fake), ones)
    g_loss.backward()
    opt_g.step()

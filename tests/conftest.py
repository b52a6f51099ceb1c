import torch

torch.set_num_threads(1)  # small models: one thread is fastest and shares the machine well
